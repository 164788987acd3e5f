-- release.lua: delete the lock only if it still holds our token, so that a
-- holder whose lease expired can never delete its successor's lock.
-- KEYS[1]: the lock key
-- ARGV[1]: the token this holder set when it acquired the lock
-- Returns 1 when the lock was deleted, 0 when it had expired or holds
-- another token.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
