-- acquire.lua (after queue.lua, which names the keys): one try of a
-- waiter, or one tick of a fair.Lock's reader. Every call renews the
-- fair.Lock's presence and the queue's expiry.
-- ARGV[4]: the waiter's token ("" for a tick)
-- ARGV[5]: its queue entry (see queue.lua; "" for a tick)
-- ARGV[6]: the mode: "join" (arrival: queue up, or take the lock when
--          nobody waits), "first" (join, after an RPUSH found the queue
--          empty), "rejoin" (ask again: take the lock if a hand-off
--          made us the holder, renewing its TTL; queue up again if our
--          entry is gone) or "tick" (serve the queue if the lock is free)
-- Returns {1, fence} when the caller holds the lock; {0, holder, last,
-- lapsed} otherwise: holder is the SHA-1 of the holder's token ("" for
-- none), last the stream's last ID (hand-offs to the caller come after
-- it), lapsed 1 when the fair.Lock's presence had run out; or, for a
-- broken counter, what lock/acquire_fenced.lua answers.
local token, entry, mode = ARGV[4], ARGV[5], ARGV[6]
local _, ttl, fenced = parse(entry)

-- Presences that ran out go; ZADD then says whether ours had (1: added).
redis.call("ZREMRANGEBYSCORE", presence, "-inf", clock() - 1)
local lapsed = redis.call("ZADD", presence, now + lease, mine)
redis.call("PEXPIRE", presence, kept)
redis.call("PEXPIRE", queue, kept) -- while anyone waits, so do the queue
redis.call("PEXPIRE", stream, kept) -- and the stream
local tail = redis.call("XREVRANGE", stream, "+", "-", "COUNT", 1)
local last = tail[1] and tail[1][1] or "0-0"

local function waiting(holder)
	if holder then
		holder = redis.sha1hex(holder)
	end
	return {0, holder or "", last, lapsed}
end

if mode == "tick" then
	local holder = redis.pcall("GET", lock)
	if type(holder) == "table" then
		return {"lock type", redis.call("TYPE", lock)["ok"]}
	end
	if not holder and handOff(false) then
		holder = redis.call("GET", lock)
	end
	return waiting(holder)
end

if fenced == "1" then
	local refusal = counterRefusal()
	if refusal then
		redis.call("LREM", queue, 0, entry)
		return refusal
	end
end
if mode == "join" and push(entry) > 1 then
	return waiting(false) -- others wait ahead of us: wait our turn
end

-- SET NX GET takes the lock if it is free and says who holds it if not.
local holder = redis.pcall("SET", lock, token, "NX", "PX", ttl, "GET")
if type(holder) == "table" and holder.err then
	redis.call("LREM", queue, 0, entry)
	return {"lock type", redis.call("TYPE", lock)["ok"]}
end
if holder == token then
	-- A hand-off made us the holder: the lease starts again now, and the
	-- fence it drew is the counter's value (nobody can have drawn one since).
	redis.call("PEXPIRE", lock, ttl)
	local n = 0
	if fenced == "1" then
		n = tonumber(redis.call("GET", counter)) or 0
	end
	return {1, n}
end
if holder then
	if mode == "rejoin" and not redis.call("LPOS", queue, entry) then
		push(entry)
	end
	return waiting(holder)
end
if mode == "join" or mode == "first" then
	-- We joined an empty queue, and SET took the free lock.
	redis.call("LREM", queue, 1, entry)
	return {1, fence(fenced)}
end
-- Free while waiters queue: its holder expired, or released without a
-- hand-off. Serve the queue in order, with us in it.
if not redis.call("LPOS", queue, entry) then
	push(entry)
end
local to, n = handOff(token)
if to == token then
	return {1, n}
end
if not to then
	redis.call("DEL", lock)
end
return waiting(to)
