-- key_type.lua: the type of a key as TYPE names it ("none", "string",
-- "hash", ...). Acquire asks it once, after its first attempt found the key
-- taken, to tell a lock held by someone else (a string) from a key that no
-- holder will ever release (any other type).
-- KEYS[1]: the lock key
-- Returns the type's name.
return redis.call("TYPE", KEYS[1])["ok"]
