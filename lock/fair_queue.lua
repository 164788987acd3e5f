-- fair_queue.lua: what the fair lock's scripts share. Go puts it in front
-- of fair_acquire.lua and fair_release.lua, so that each runs as one
-- atomic script. Every key shares the lock key's hash tag, so all of them
-- live in one Redis Cluster slot (see fairKeys in fair.go).
-- KEYS[1]: the lock key; its value is the holder's token
-- KEYS[2]: the queue: a sorted set of entries "token ttl fenced", scored
--          by arrival (the server time, in microseconds), so the first is
--          the longest waiting; two that arrive in the same microsecond
--          are ordered by entry. ttl is the TTL the waiter asked for, in
--          whole milliseconds; fenced is 1 when it wants a fence, 0
--          otherwise
-- KEYS[3]: the queue leases: the same entries, scored by the server time
--          (in ms) at which each runs out unless its waiter refreshes it
-- KEYS[4]: the fence counter (see acquire_fenced.lua)
-- KEYS[5]: the hand-off channel. It is a channel, not a key, but it is
--          passed among the keys so that Redis Cluster checks its slot too
-- ARGV[1]: the command that tells a waiter it was handed the lock:
--          "PUBLISH", or "SPUBLISH" (sharded pub/sub) on Redis Cluster
--
-- Every spend of a contended lock runs these scripts, so they count their
-- commands: a key's type is asked only when GET fails on it, the queue is
-- looked at only when the lock is free, and only its head's lease is read.
local lock, queue, leases, counter, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local publish = ARGV[1]

-- now returns the server's clock in milliseconds and in microseconds. The
-- waiters' clocks play no part, so they need not agree. A script may read
-- TIME and then write because Redis (5 and later) replicates what a
-- script did, not the script itself.
local function now()
	local t = redis.call("TIME")
	local s, us = tonumber(t[1]), tonumber(t[2])
	return s * 1000 + math.floor(us / 1000), s * 1000000 + us
end

-- get reads a string key. For a key of another type it returns nil and
-- the type's name, which TYPE is asked for only then.
local function get(key)
	local value = redis.pcall("GET", key)
	if type(value) == "table" and value.err then
		return nil, redis.call("TYPE", key)["ok"]
	end
	return value
end

-- parse splits a queue entry into token, ttl and fenced; nil for an entry
-- that no waiter wrote.
local function parse(entry)
	return string.match(entry, "^(%S+) (%d+) ([01])$")
end

-- counterRefusal returns nil when the fence counter can be incremented,
-- and otherwise the pair acquire_fenced.lua answers with: {"counter
-- type", t}, {"counter value", v} or {"counter limit", v}.
local function counterRefusal()
	local value, wrongType = get(counter)
	if wrongType then
		return {"counter type", wrongType}
	end
	if value then
		if not string.match(value, "^%d+$") then
			return {"counter value", value}
		end
		if #value > 16 or tonumber(value) >= 2^53 then
			return {"counter limit", value}
		end
	end
	return nil
end

-- take makes token the holder for ttl ms and returns its fence: the
-- counter incremented when fenced is "1", 0 otherwise. SET replaces
-- whatever the lock key held, so a hand-off needs no DEL first.
local function take(token, ttl, fenced)
	redis.call("SET", lock, token, "PX", ttl)
	if fenced == "1" then
		return redis.call("INCR", counter)
	end
	return 0
end

-- handOff makes the first waiter whose lease still runs the holder, with
-- the TTL it asked for, takes it out of the queue and publishes "id
-- fence" on the channel, so that its waiter knows without asking again.
-- id is the SHA-1 of its token: whoever listens learns who got the lock,
-- not how to release it. The lock must be free, or held by the caller who
-- gives it up. Entries ahead of that waiter whose lease ran out (their
-- waiters stopped refreshing them: crashed, or cut off from Redis) leave
-- the queue on the way. It publishes nothing for quiet, the caller's own
-- token. Returns the new holder's token and fence, or false when nobody
-- waits; then it has changed nothing.
local function handOff(quiet)
	local t
	while true do
		local head = redis.call("ZPOPMIN", queue)[1]
		if not head then
			return false, 0
		end
		t = t or now()
		local expires = tonumber(redis.call("ZSCORE", leases, head))
		redis.call("ZREM", leases, head)
		local token, ttl, fenced = parse(head)
		-- Skip a waiter whose lease ran out, an entry no waiter wrote, and
		-- a waiter that wants a fence when the counter is broken: its next
		-- try tells it why.
		if expires and expires > t and token and not (fenced == "1" and counterRefusal()) then
			local fence = take(token, ttl, fenced)
			if token ~= quiet then
				redis.call(publish, channel, redis.sha1hex(token) .. " " .. fence)
			end
			return token, fence
		end
	end
end
