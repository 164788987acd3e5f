-- acquire_fenced.lua: take the lock and draw a fencing token in one atomic
-- step, so that fences are handed out in the order the lock was taken.
-- KEYS[1]: the lock key
-- KEYS[2]: the fence counter; it never expires and shares KEYS[1]'s hash
--          tag, so both live in one Redis Cluster slot
-- ARGV[1]: a fresh random token
-- ARGV[2]: the TTL in whole milliseconds (at least 1)
-- Returns the new fence (1 or more) when the lock was taken, 0 when it is
-- held by someone else. When a key holds what it must not, it changes
-- nothing and returns a pair saying what is wrong:
--   {"lock type", t}       the lock key holds a t (hash, list...), not a lock
--   {"counter type", t}    the counter holds a t, not a number
--   {"counter value", v}   the counter holds v, not a whole number >= 0
--   {"counter limit", v}   the counter is at 2^53 or more: Lua numbers are
--                          doubles, so the fence INCR gives back would be
--                          rounded (and at 2^63 INCR fails)
local lockType = redis.call("TYPE", KEYS[1])["ok"]
if lockType ~= "none" and lockType ~= "string" then
	return {"lock type", lockType}
end
local counterType = redis.call("TYPE", KEYS[2])["ok"]
if counterType ~= "none" and counterType ~= "string" then
	return {"counter type", counterType}
end
local counter = redis.call("GET", KEYS[2])
if counter then
	if not string.match(counter, "^%d+$") then
		return {"counter value", counter}
	end
	if #counter > 16 or tonumber(counter) >= 2^53 then
		return {"counter limit", counter}
	end
end
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return redis.call("INCR", KEYS[2])
end
return 0
