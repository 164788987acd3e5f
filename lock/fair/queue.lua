-- queue.lua: what the fair lock's scripts share. Go puts it in front of
-- acquire.lua and release.lua, so that each runs as one atomic script.
-- Every key shares the lock key's hash tag (see fairKeys in fair.go), and
-- every key a script touches is one of these five.
-- KEYS[1]: the lock key; its value is the holder's token
-- KEYS[2]: the queue: a list of entries "token ttl fenced fair" in arrival
--          order (join at the tail, the head is served first). ttl is in
--          whole milliseconds, fenced is 1 for a fence, fair names the
--          fair.Lock (the process) the waiter waits in
-- KEYS[3]: the fence counter (see lock/acquire_fenced.lua)
-- KEYS[4]: presence: a sorted set of fair.Lock names, each scored with the
--          server time in ms until which that fair.Lock counts as alive
-- KEYS[5]: the hand-offs: a stream of entries {h = "id fence fair"}, id the
--          SHA-1 of the new holder's token, so the token never goes out
-- ARGV[1]: how long the queue, presence and stream last after a write (ms)
-- ARGV[2]: how long a presence lasts unless renewed (ms)
-- ARGV[3]: the caller's fair.Lock's name
--
-- Every key written expires but the fence counter, which must only grow.
local lock, queue, counter, presence, stream = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local kept, lease, mine = ARGV[1], tonumber(ARGV[2]), ARGV[3]

-- clock is the server's time in ms, asked once per script.
local now
local function clock()
	if not now then
		local t = redis.call("TIME")
		now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	end
	return now
end

-- parse splits a queue entry; nil for an entry no waiter wrote.
local function parse(entry)
	return string.match(entry, "^(%S+) (%d+) ([01]) (%S+)$")
end

-- push queues entry at the tail and returns the queue's length.
local function push(entry)
	local n = redis.call("RPUSH", queue, entry)
	redis.call("PEXPIRE", queue, kept)
	return n
end

-- counterRefusal is nil when the counter can be incremented, else what
-- lock/acquire_fenced.lua answers: {"counter type"|"counter value"|"counter limit", detail}.
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

local function fence(fenced)
	if fenced == "1" then
		return redis.call("INCR", counter)
	end
	return 0
end

-- handOff pops the queue until it finds a waiter whose fair.Lock is
-- present, makes it the holder with its own TTL and appends "id fence fair"
-- to the stream, which its fair.Lock reads. It skips entries no waiter
-- wrote and waiters of a fair.Lock whose presence ran out (a process that
-- crashed, hangs or lost Redis; the caller's own fair.Lock is present);
-- a waiter that wants a fence when the
-- counter is broken is told so with fence -1 and skipped. The caller's own
-- token, quiet, is made holder without a message. Returns the new holder's
-- token and fence, or false when nobody is left; the lock is then as it was.
local function handOff(quiet)
	while true do
		local head = redis.call("LPOP", queue)
		if not head then
			return false, 0
		end
		local token, ttl, fenced, fair = parse(head)
		if token and token == quiet then
			redis.call("SET", lock, token, "PX", ttl)
			return token, fence(fenced)
		end
		local seen = token and (fair == mine or redis.call("ZSCORE", presence, fair))
		if seen == true or seen and tonumber(seen) >= clock() then
			local n = -1
			if fenced ~= "1" or not counterRefusal() then
				redis.call("SET", lock, token, "PX", ttl)
				n = fence(fenced)
			end
			local h = redis.sha1hex(token) .. " " .. n .. " " .. fair
			if not redis.call("XADD", stream, "NOMKSTREAM", "MAXLEN", "~", 256, "*", "h", h) then
				redis.call("XADD", stream, "*", "h", h)
				redis.call("PEXPIRE", stream, kept) -- the tries and ticks renew it
			end
			if n >= 0 then
				return token, n
			end
		end
	end
end
