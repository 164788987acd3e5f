-- fair_acquire.lua (after fair_queue.lua, which names the keys): one try
-- of a fair lock's waiter. It takes the lock when nobody holds it and
-- nobody waits; otherwise it puts the waiter at the end of the queue, or
-- keeps its place there and renews its lease. A waiter runs it on arrival
-- and then every third of a lease while it waits.
-- ARGV[2]: the waiter's token, fresh for every acquisition
-- ARGV[3]: its queue entry, "token ttl fenced" (see fair_queue.lua)
-- ARGV[4]: how long the entry lives without a renewal, in ms
-- Returns {1, fence} when the waiter holds the lock: it took it now, or a
-- release handed it over (the message saying so may be on its way, or
-- lost); fence is 0 unless it asked for one. Returns {0, pttl} when it
-- waits: pttl is the holder's remaining TTL in ms, -1 for a lock without
-- one. When a key holds what it must not, it changes nothing and returns
-- a pair saying what is wrong, as acquire_fenced.lua does:
--   {"lock type", t}   the lock key holds a t (hash, list...), not a lock
--   {"counter ...", v} the fence counter is broken (only when fenced)
-- Without contention it runs GET, EXISTS and SET (and GET and INCR on the
-- counter when fenced); a waiter's try runs GET, TIME, two ZADDs and PTTL.
local token, entry, lease = ARGV[2], ARGV[3], tonumber(ARGV[4])
local _, ttl, fenced = parse(entry)

local holder, wrongType = get(lock)
if wrongType then
	return {"lock type", wrongType}
end
if fenced == "1" then
	local refusal = counterRefusal()
	if refusal then
		return refusal
	end
end

if holder == token then
	-- A release made us the holder. The fence it drew is the counter's
	-- value: nobody else can have drawn one since, while we hold the lock.
	local fence = 0
	if fenced == "1" then
		fence = tonumber(redis.call("GET", counter)) or 0
	end
	return {1, fence}
end
if not holder and redis.call("EXISTS", queue) == 0 then
	return {1, take(token, ttl, fenced)}
end

-- Queue up at the end (NX keeps our place if we have one already), and
-- renew the lease of our entry.
local ms, us = now()
redis.call("ZADD", queue, "NX", us, entry)
redis.call("ZADD", leases, ms + lease, entry)

-- Free, but others wait (its holder expired, or left it free): the first
-- in line gets it, which may be us.
if not holder then
	local to, fence = handOff(token)
	if to == token then
		return {1, fence}
	end
end
return {0, redis.call("PTTL", lock)}
