-- Refresh: set the lock's TTL again only while it holds the caller's token;
-- a key that expired is never created again.
-- KEYS[1] the lock key; ARGV[1] the caller's token; ARGV[2] the TTL in ms.
-- Returns 1 when it extended the lease, 0 when the key was gone or another's.
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
