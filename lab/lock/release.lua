-- release.lua: a DEL guarded by a token check. The key goes only while its
-- value is the caller's token: a holder whose lease ran out finds another
-- token (or none) and leaves its successor's lock alone.
-- KEYS[1]: the lock key
-- ARGV[1]: the token this holder set when it acquired the lock
-- Returns 1 when the lock was deleted, 0 when it had expired or holds
-- another token.
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("DEL", KEYS[1])
end
return 0
