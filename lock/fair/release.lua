-- release.lua (after queue.lua, which names the keys): give a fair lock
-- back, or leave its queue. When the caller holds the lock it passes
-- straight to the first waiter (see handOff); with nobody waiting it is
-- deleted. The token check keeps a late holder from giving away a lock
-- that has passed to someone else.
-- ARGV[4]: the caller's token
-- ARGV[5]: the caller's queue entry to take out of the queue ("" for none):
--          a waiter that gives up leaves, and passes the lock on if a
--          release had just handed it over
-- Returns 1 when the caller held the lock, 0 otherwise.
local token, entry = ARGV[4], ARGV[5]
if entry ~= "" then
	redis.call("LREM", queue, 0, entry)
end
if redis.call("GET", lock) ~= token then
	return 0
end
if not handOff(false) then
	redis.call("DEL", lock)
end
return 1
