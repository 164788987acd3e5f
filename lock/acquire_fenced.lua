-- AcquireFenced: take the lock and the next fencing token in one step, so
-- that the order of the tokens is the order in which holders took the lock.
-- KEYS[1] the lock key; KEYS[2] the fence counter, in the same hash slot.
-- ARGV[1] the caller's token; ARGV[2] the TTL in ms.
-- Returns the new fence (1, 2, ...), or 0 when someone else holds the lock.
-- A counter INCR refuses (it holds no integer) is an error, and the lock
-- is given back: a failed call holds nothing.
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then
  local fence = redis.pcall("INCR", KEYS[2])
  if type(fence) == "table" then -- INCR's error: no fence, so no lock
    redis.call("DEL", KEYS[1])
    return redis.error_reply("the fence counter " .. KEYS[2] .. " refused INCR: " .. fence.err)
  end
  return fence
end
return 0
