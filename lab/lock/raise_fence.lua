-- raise_fence.lua: make sure the fence counter is at least ARGV[1]. A Redis
-- restart without persistence loses the counter, which then starts again
-- below the fences the database has already accepted; raising it to the
-- highest accepted fence lets new holders be accepted again.
-- KEYS[1]: the fence counter
-- ARGV[1]: the lowest value the counter may have, a whole number no larger
--          than 2^53 (RaiseFence checks it), so that tonumber is exact
-- Returns the counter's value afterwards as the string Redis stores (exact,
-- however large), "0" when there is no counter, or {"counter type", t}
-- when the counter holds a t (hash, list...): then it changes nothing.
local counterType = redis.call("TYPE", KEYS[1])["ok"]
if counterType ~= "none" and counterType ~= "string" then
	return {"counter type", counterType}
end
local current = redis.call("GET", KEYS[1]) or "0"
local n = tonumber(current)
if n and n >= tonumber(ARGV[1]) then
	return current
end
-- Below the floor, or not a number at all: write the floor. Write it as
-- the string it came as: a Lua number is written in a float notation
-- (9.2233720368547758e+18) that INCR refuses.
redis.call("SET", KEYS[1], ARGV[1])
return ARGV[1]
