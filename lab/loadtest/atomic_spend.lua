-- atomic_spend.lua: a whole spend in one step. Redis runs one script at a
-- time, so no other client can change the balance between the check and
-- the decrement: the lost update of step 1 cannot happen, and no lock is
-- needed.
-- KEYS[1]: the wallet's balance, a whole number of 0 or more
-- ARGV[1]: the amount to take, a whole number of 1 or more
-- Returns 1 when it took the amount, 0 when the balance is below it (and
-- changes nothing), -1 when there is no balance at KEYS[1].
local balance = redis.call("GET", KEYS[1])
if not balance then
	return -1
end
-- Compare the decimal strings, not tonumber's doubles, which round above
-- 2^53: a shorter number is smaller, and two of the same length compare
-- digit by digit.
local amount = ARGV[1]
if string.sub(balance, 1, 1) == "-" or #balance < #amount or (#balance == #amount and balance < amount) then
	return 0
end
redis.call("DECRBY", KEYS[1], amount)
return 1
