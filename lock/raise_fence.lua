-- raise_fence.lua: make sure the fence counter is at least ARGV[1]. A Redis
-- restart without persistence loses the counter, which then starts again
-- below the fences the database has already accepted; raising it to the
-- highest accepted fence lets new holders be accepted again.
-- KEYS[1]: the fence counter
-- ARGV[1]: the lowest value the counter may have
-- Returns the counter's value afterwards.
local floor = tonumber(ARGV[1])
local current = tonumber(redis.call("GET", KEYS[1]) or "0")
if current < floor then
	redis.call("SET", KEYS[1], floor)
	return floor
end
return current
