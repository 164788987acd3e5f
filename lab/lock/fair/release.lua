-- release.lua (after queue.lua): give the lock back, passing it to the
-- first waiter (see handOff) or deleting it, or leave the queue.
-- ARGV[4]: the caller's token; ARGV[5]: its queue entry to take out, ""
-- for none (a waiter that gives up passes on a lock just handed to it)
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
