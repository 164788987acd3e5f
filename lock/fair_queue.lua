-- fair_queue.lua: what the fair lock's scripts share. Go puts it in front
-- of fair_acquire.lua and fair_release.lua, so that each runs as one
-- atomic script. Every key shares the lock key's hash tag, so all of them
-- live in one Redis Cluster slot (see fairKeys in fair.go).
-- KEYS[1]: the lock key; its value is the holder's token
-- KEYS[2]: the queue: a sorted set of entries "token ttl fenced", scored
--          by arrival (1, 2, 3...), so the first is the longest waiting.
--          ttl is the TTL the waiter asked for, in whole milliseconds;
--          fenced is 1 when it wants a fence, 0 otherwise
-- KEYS[3]: the queue leases: the same entries, scored by the server time
--          (in ms) at which each runs out unless its waiter refreshes it
-- KEYS[4]: the fence counter (see acquire_fenced.lua)
-- KEYS[5]: the hand-off channel. It is a channel, not a key, but it is
--          passed among the keys so that Redis Cluster checks its slot too
-- ARGV[1]: the command that tells a waiter it was handed the lock:
--          "PUBLISH", or "SPUBLISH" (sharded pub/sub) on Redis Cluster
local lock, queue, leases, counter, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local publish = ARGV[1]

-- now is the server's clock in milliseconds. The waiters' clocks play no
-- part, so they need not agree. A script may read TIME and then write
-- because Redis (5 and later) replicates what a script did, not the
-- script itself.
local function now()
	local t = redis.call("TIME")
	return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- dropDead takes out of the queue the entries whose lease has run out:
-- their waiters stopped refreshing them (crashed, or cut off from Redis).
local function dropDead(t)
	local dead = redis.call("ZRANGEBYSCORE", leases, "-inf", t, "LIMIT", 0, 100)
	if #dead > 0 then
		redis.call("ZREM", leases, unpack(dead))
		redis.call("ZREM", queue, unpack(dead))
	end
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
	local counterType = redis.call("TYPE", counter)["ok"]
	if counterType ~= "none" and counterType ~= "string" then
		return {"counter type", counterType}
	end
	local value = redis.call("GET", counter)
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
-- counter incremented when fenced is "1", 0 otherwise.
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
-- not how to release it. The lock must be free. It publishes nothing for
-- quiet, the caller's own token. Returns the new holder's token and fence,
-- or false when nobody waits.
local function handOff(t, quiet)
	dropDead(t)
	while true do
		local head = redis.call("ZRANGE", queue, 0, 0)[1]
		if not head then
			return false, 0
		end
		redis.call("ZREM", queue, head)
		redis.call("ZREM", leases, head)
		local token, ttl, fenced = parse(head)
		-- Skip an entry no waiter wrote, and a waiter that wants a fence
		-- when the counter is broken: its next try tells it why.
		if token and not (fenced == "1" and counterRefusal()) then
			local fence = take(token, ttl, fenced)
			if token ~= quiet then
				redis.call(publish, channel, redis.sha1hex(token) .. " " .. fence)
			end
			return token, fence
		end
	end
end

