-- acquire_fenced.lua: take the lock and draw a fencing token in one atomic
-- step, so that fences are handed out in the order the lock was taken.
-- KEYS[1]: the lock key
-- KEYS[2]: the fence counter; it never expires and shares KEYS[1]'s hash
--          tag, so both live in one Redis Cluster slot
-- ARGV[1]: a fresh random token
-- ARGV[2]: the TTL in milliseconds (at least 1)
-- Returns the new fence (1 or more) when the lock was taken, 0 when it is
-- held by someone else.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
	return redis.call("INCR", KEYS[2])
end
return 0
