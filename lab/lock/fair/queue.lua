-- queue.lua: what the fair lock's scripts share; Go puts it in front of
-- acquire.lua and release.lua. All keys share the lock key's hash tag, and
-- these five are every key the scripts touch:
-- KEYS[1]: the lock; its value is the holder's token
-- KEYS[2]: the queue, entries "token ttl fenced fair" in arrival order:
--          ttl in ms, fenced 1 for a fence, fair the fair.Lock's name
-- KEYS[3]: the fence counter (see lock/acquire_fenced.lua)
-- KEYS[4]: presence: fair.Lock names scored with the server time (ms)
--          until which each counts as alive
-- KEYS[5]: the hand-off stream, entries {h = "id fence fair"}; id is the
--          SHA-1 of the new holder's token, which never goes out
-- ARGV[1]: how long queue, presence and stream last after a write (ms)
-- ARGV[2]: how long a presence lasts (ms); ARGV[3]: the caller's fair.Lock
-- Every key written expires but the counter, which must only grow.
local lock, queue, counter, presence, stream = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local kept, lease, mine = ARGV[1], tonumber(ARGV[2]), ARGV[3]

local now -- the server's time in ms, asked once
local function clock()
	if not now then
		local t = redis.call("TIME")
		now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
	end
	return now
end

local function parse(entry) -- nil for an entry no waiter wrote
	return string.match(entry, "^(%S+) (%d+) ([01]) (%S+)$")
end

local function push(entry)
	local n = redis.call("RPUSH", queue, entry)
	redis.call("PEXPIRE", queue, kept)
	return n
end

-- counterRefusal: nil when the counter can be incremented, else what
-- lock/acquire_fenced.lua answers.
local function counterRefusal()
	local value = redis.pcall("GET", counter)
	if type(value) == "table" and value.err then
		return {"counter type", redis.call("TYPE", counter)["ok"]}
	elseif value and not string.match(value, "^%d+$") then
		return {"counter value", value}
	elseif value and (#value > 16 or tonumber(value) >= 2^53) then
		return {"counter limit", value}
	end
end

local function fence(fenced)
	return fenced == "1" and redis.call("INCR", counter) or 0
end

-- handOff pops the queue to the first waiter whose fair.Lock is present
-- (the caller's is), makes it the holder with its own TTL and appends its
-- hand-off to the stream. It skips entries no waiter wrote, waiters of an
-- absent fair.Lock (a process that crashed, hangs or lost Redis), and
-- fenced waiters while the counter is broken (told so with fence -1). The
-- token quiet is made holder without a hand-off. Returns the new holder's
-- token and fence, or false with the lock as it was.
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
				redis.call("PEXPIRE", stream, kept) -- tries and ticks renew it
			end
			if n >= 0 then
				return token, n
			end
		end
	end
end
