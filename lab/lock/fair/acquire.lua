-- acquire.lua (after queue.lua): a waiter's try, or a reader's tick. Each
-- renews the caller's presence and the expiry of queue and stream.
-- ARGV[4]: the waiter's token, ARGV[5] its entry ("" for a tick)
-- ARGV[6]: "join" (queue up, or take the lock if nobody waits), "first"
--          (join after an RPUSH found the queue empty), "rejoin" (take the
--          lock if handed it, renewing its TTL; queue again if the entry is
--          gone) or "tick" (serve the queue if the lock is free)
-- ARGV[7..]: for a tick, the entries of the caller's queued waiters
-- Returns {1, fence} to a holder; else {0, the stream's last ID (hand-offs
-- to the caller come later), and for a tick the positions in ARGV[7..] of
-- the entries the queue does not hold}; or a refusal as
-- lock/acquire_fenced.lua's.
local token, entry, mode = ARGV[4], ARGV[5], ARGV[6]
local _, ttl, fenced = parse(entry)

redis.call("ZREMRANGEBYSCORE", presence, "-inf", clock() - 1)
redis.call("ZADD", presence, now + lease, mine)
redis.call("PEXPIRE", presence, kept)
redis.call("PEXPIRE", queue, kept)
redis.call("PEXPIRE", stream, kept)
local tail = redis.call("XREVRANGE", stream, "+", "-", "COUNT", 1)
local function waiting(gone)
	return {0, tail[1] and tail[1][1] or "0-0", gone or {}}
end

local holder
if mode == "tick" then
	holder = redis.pcall("GET", lock)
else
	if fenced == "1" then
		local refusal = counterRefusal()
		if refusal then
			redis.call("LREM", queue, 0, entry)
			return refusal
		end
	end
	if mode == "join" and push(entry) > 1 then
		return waiting() -- others wait ahead of us
	end
	-- SET NX GET takes a free lock, and says who holds it if not.
	holder = redis.pcall("SET", lock, token, "NX", "PX", ttl, "GET")
end
if type(holder) == "table" and holder.err then
	redis.call("LREM", queue, 0, entry)
	return {"lock type", redis.call("TYPE", lock)["ok"]}
end
if mode == "tick" then
	-- A waiter whose entry is gone must ask again: it was handed the lock
	-- and has not read so yet, a hand-off skipped it while its fair.Lock
	-- seemed absent, or Redis lost the queue (FLUSHDB, DEL, a restart).
	local gone = {}
	if #ARGV > 6 then
		local queued = {}
		for _, e in ipairs(redis.call("LRANGE", queue, 0, -1)) do
			queued[e] = true
		end
		for i = 7, #ARGV do
			if not queued[ARGV[i]] then
				gone[#gone + 1] = i - 6
			end
		end
	end
	if not holder then
		handOff(false)
	end
	return waiting(gone)
end
if holder == token then
	-- Handed over: the lease starts again, with the fence the hand-off
	-- drew (nobody can have drawn one since).
	redis.call("PEXPIRE", lock, ttl)
	return {1, fenced == "1" and tonumber(redis.call("GET", counter)) or 0}
end
if holder then
	if mode == "rejoin" and not redis.call("LPOS", queue, entry) then
		push(entry)
	end
	return waiting()
end
if mode ~= "rejoin" then
	redis.call("LREM", queue, 1, entry) -- we joined an empty queue
	return {1, fence(fenced)}
end
-- Free while waiters queue (a holder expired): serve them, us among them.
if not redis.call("LPOS", queue, entry) then
	push(entry)
end
local to, n = handOff(token)
if to == token then
	return {1, n}
elseif not to then
	redis.call("DEL", lock)
end
return waiting()
