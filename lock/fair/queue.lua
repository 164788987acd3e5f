-- queue.lua: what the fair lock's scripts share. Go puts it in front
-- of acquire.lua and release.lua, so that each runs as one
-- atomic script. Every key shares the lock key's hash tag, so all of them
-- live in one Redis Cluster slot (see fairKeys in fair.go).
-- KEYS[1]: the lock key; its value is the holder's token
-- KEYS[2]: the queue: a list of entries "token ttl fenced fair", in the
--          order the waiters arrived: they join at the tail and the head
--          is served first. ttl is the TTL the waiter asked for, in whole
--          milliseconds; fenced is 1 when it wants a fence, 0 otherwise;
--          fair names the fair.Lock (the process) the waiter waits in
-- KEYS[3]: the fence counter (see lock/acquire_fenced.lua)
-- KEYS[4]: what the hand-off channels start with: the fair.Lock named f
--          listens on KEYS[4] .. ":" .. f. It is a channel, not a key, but
--          it is passed among the keys so that Redis Cluster checks its
--          slot too
-- ARGV[1]: the command that tells a waiter it was handed the lock:
--          "PUBLISH", or "SPUBLISH" (sharded pub/sub) on Redis Cluster
--
-- Each fair.Lock that has waiters on this lock keeps a presence key, KEYS[2]
-- followed by ":" and the fair.Lock's name, alive with a short TTL, and renews
-- it for all of them at once (see acquire.lua). A hand-off whose
-- message reached nobody (PUBLISH counts who received it) asks it: a
-- fair.Lock that is present will find out by asking (its connection dropped,
-- or Redis has not yet confirmed its subscription), but one whose
-- presence ran out belongs to a process that crashed, hangs or lost
-- Redis, and the hand-off skips its waiter. The presence keys and
-- channels of other fair.Locks are used without being declared in KEYS; they
-- share the hash tag, so on Redis Cluster they live in the same slot as
-- the declared ones.
--
-- Every key these scripts write expires, but the fence counter, which
-- must only grow: the lock and the presence keys with their PX, the queue
-- with the PEXPIRE that acquire.lua sends with every write to it and
-- every renewal of a presence, so that entries of waiters that could not
-- leave go with it once nobody waits.
--
-- Every spend of a contended lock runs these scripts, so they count their
-- commands: a waiter that finds others queued joins with one RPUSH, and a
-- hand-off reads the lock, pops the head, sets the lock and publishes. A
-- key's type is asked only when a command fails on it.
local lock, queue, counter, channel = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local publish = ARGV[1]

-- parse splits a queue entry into token, ttl, fenced and fair; nil for an
-- entry that no waiter wrote.
local function parse(entry)
	return string.match(entry, "^(%S+) (%d+) ([01]) (%S+)$")
end

-- counterRefusal returns nil when the fence counter can be incremented,
-- and otherwise the pair lock/acquire_fenced.lua answers with: {"counter
-- type", t}, {"counter value", v} or {"counter limit", v}.
local function counterRefusal()
	local value = redis.pcall("GET", counter)
	if type(value) == "table" and value.err then
		return {"counter type", redis.call("TYPE", counter)["ok"]}
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

-- fence returns the fence of a new holder: the counter incremented when
-- fenced is "1", 0 otherwise.
local function fence(fenced)
	if fenced == "1" then
		return redis.call("INCR", counter)
	end
	return 0
end

-- handOff makes the first waiter whose fair.Lock is still present the holder,
-- with the TTL it asked for, taking it and the entries ahead of it out of
-- the queue, and publishes "id fence" on its fair.Lock's channel, so that its
-- waiter knows without asking again. id is the SHA-1 of its token:
-- whoever listens learns who got the lock, not how to release it. The
-- lock must be free, or held by the caller who gives it up; SET replaces
-- whatever it held. It skips an entry no waiter wrote, a waiter whose
-- message reached nobody and whose fair.Lock's presence ran out, and a waiter
-- that wants a fence when the counter is broken, which it tells with the
-- fence -1 to ask again and learn why. A fence drawn for a waiter it then
-- skips is lost: fences only need to grow. The caller's own token, quiet,
-- is taken with no message. Returns the new holder's token and fence, or
-- false when nobody waits; then the lock is as it was, or held by a
-- skipped waiter's token, which the caller must delete.
local function handOff(quiet)
	while true do
		local head = redis.call("LPOP", queue)
		if not head then
			return false, 0
		end
		local token, ttl, fenced, fair = parse(head)
		if token == quiet then
			redis.call("SET", lock, token, "PX", ttl)
			return token, fence(fenced)
		end
		if token then
			local to, id = channel .. ":" .. fair, redis.sha1hex(token)
			if fenced == "1" and counterRefusal() then
				redis.call(publish, to, id .. " -1")
			else
				redis.call("SET", lock, token, "PX", ttl)
				local n = fence(fenced)
				if redis.call(publish, to, id .. " " .. n) > 0
					or redis.call("EXISTS", queue .. ":" .. fair) == 1 then
					return token, n
				end
			end
		end
	end
end
