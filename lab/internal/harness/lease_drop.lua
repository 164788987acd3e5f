-- Deletes the run lease in KEYS[1] while it holds the run's token,
-- ARGV[1]; answers 0 when it holds another token, or none.
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call("DEL", KEYS[1])
