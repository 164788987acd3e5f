-- refresh.lua: a PEXPIRE guarded by a token check; a key whose value is
-- another holder's token keeps its TTL.
-- KEYS[1]: the lock key
-- ARGV[1]: the token this holder set when it acquired the lock
-- ARGV[2]: the new TTL in milliseconds (at least 1)
-- Returns 1 when the TTL was reset, 0 when the lock had expired or holds
-- another token (then it is not ours to extend).
if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
end
return 0
