-- Release: delete the lock only while it holds the caller's token.
-- KEYS[1] the lock key; ARGV[1] the caller's token.
-- Returns 1 when it deleted the key, 0 when the key was gone or another's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("DEL", KEYS[1])
end
return 0
