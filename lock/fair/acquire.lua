-- acquire.lua (after queue.lua, which names the keys): one try
-- of a fair lock's waiter. On arrival it joins the queue, and takes the
-- lock at once when nobody waited and nobody held it; later tries find
-- out whether a release made it the holder, or serve the queue when the
-- lock is free with waiters queued (its holder expired).
-- KEYS[5]: the presence key of the caller's fair.Lock (see queue.lua)
-- ARGV[2]: the waiter's token, fresh for every acquisition
-- ARGV[3]: its queue entry, "token ttl fenced fair" (see queue.lua)
-- ARGV[4]: "join" on arrival; "first" on arrival too, after an RPUSH of
--          the entry that found the queue empty; "check" to ask again;
--          "rejoin" to ask again and join the queue again if the entry is
--          no longer in it
-- ARGV[5]: the lease of the fair.Lock's presence in ms, to renew it now; 0
--          leaves it alone (another waiter of the fair.Lock renews it)
-- ARGV[6]: how long the queue lasts in ms after it was last written or
--          renewed, longer than the presence lease: a queue that nobody
--          waits on any more (a waiter that gave up and could not leave)
--          expires, and never before the presence of a fair.Lock that waits
-- Returns {1, fence, lapsed} when the waiter holds the lock: it took it
-- now, or a release handed it over (the message saying so may be on its
-- way, or lost); fence is 0 unless it asked for one. Returns {0, holder,
-- lapsed} when it waits: holder is the SHA-1 of the holder's token (""
-- when unknown), so that a fair.Lock can tell a waiter of its own that missed
-- its hand-off. lapsed is 1 when the presence key had run out before this
-- renewal, so that entries of this fair.Lock may have been skipped and must
-- join again. When a key holds what it must not, it changes nothing and
-- returns a pair saying what is wrong, as lock/acquire_fenced.lua does:
--   {"lock type", t}   the lock key holds a t (hash, list...), not a lock
--   {"counter ...", v} the fence counter is broken (only when fenced)
-- A waiter that finds others queued runs only RPUSH and PEXPIRE (and a
-- waiter whose fair.Lock has others queued sends those two without this
-- script). The first to queue behind a holder runs RPUSH, PEXPIRE and
-- SET; without contention, RPUSH, PEXPIRE, SET and LREM (and GET and INCR
-- on the counter when fenced).
local token, entry, mode, lease = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])
local kept = ARGV[6]
local _, ttl, fenced = parse(entry)

-- push queues the entry at the tail; every write to the queue renews
-- its expiry. Returns the queue's length.
local function push()
	local n = redis.call("RPUSH", queue, entry)
	redis.call("PEXPIRE", queue, kept)
	return n
end

local lapsed = 0
if lease > 0 then
	if not redis.call("SET", KEYS[5], "1", "PX", lease, "GET") then
		lapsed = 1
		if mode == "check" then
			mode = "rejoin"
		end
	end
	redis.call("PEXPIRE", queue, kept)
end
if fenced == "1" then
	local refusal = counterRefusal()
	if refusal then
		if mode ~= "join" then
			redis.call("LREM", queue, 0, entry)
		end
		return refusal
	end
end

if mode == "join" and push() > 1 then
	return {0, "", lapsed} -- others wait ahead of us: wait our turn
end

-- SET NX GET takes the lock if it is free and says who holds it if not.
local holder = redis.pcall("SET", lock, token, "NX", "PX", ttl, "GET")
if type(holder) == "table" and holder.err then
	redis.call("LREM", queue, 0, entry)
	return {"lock type", redis.call("TYPE", lock)["ok"]}
end
if holder == token then
	-- A release made us the holder. The fence it drew is the counter's
	-- value: nobody else can have drawn one since, while we hold the lock.
	local n = 0
	if fenced == "1" then
		n = tonumber(redis.call("GET", counter)) or 0
	end
	return {1, n, lapsed}
end
if holder then
	if mode == "rejoin" and not redis.call("LPOS", queue, entry) then
		push()
	end
	return {0, redis.sha1hex(holder), lapsed}
end

-- The lock was free, and SET took it for us.
if mode == "join" or mode == "first" then
	-- We joined an empty queue: nobody waits ahead of us.
	redis.call("LREM", queue, 1, entry)
	return {1, fence(fenced), lapsed}
end
-- Free while waiters queue: its holder expired, or gave it back without a
-- hand-off. Serve the queue in order, with us in it; the first may be us.
if not redis.call("LPOS", queue, entry) then
	push()
end
local to, n = handOff(token)
if to == token then
	return {1, n, lapsed}
end
if not to then -- never: our own entry passes
	redis.call("DEL", lock)
	return {0, "", lapsed}
end
return {0, redis.sha1hex(to), lapsed}
