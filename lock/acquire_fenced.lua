-- AcquireFenced: take the lock and the next fencing token in one step, so
-- that the order of the tokens is the order in which holders took the lock.
-- KEYS[1] the lock key; KEYS[2] the fence counter, in the same hash slot.
-- ARGV[1] the caller's token; ARGV[2] the TTL in ms.
-- Returns the new fence (1, 2, ...), or 0 when someone else holds the lock.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  return redis.call("INCR", KEYS[2])
end
return 0
