// Package loadtest puts every way of spending from a wallet that this repo
// shows side by side, under the same load, and checks each one with the
// verdict every step uses.
//
// Workers spend from wallets picked at random (or all from one, Hot) for a
// fixed time per strategy, on wallets set up afresh for each strategy:
//
//	none       Redis GET, work, SET, no lock: the control, BROKEN under contention
//	lock       the hand-built lease of step 2, waiters retry after 5 to 15 ms
//	redislock  bsm/redislock with step 4's jittered retries
//	redsync    go-redsync's mutex on the one Redis, with the same retries
//	redlock    go-redsync's mutex over three independent nodes: Redlock, a majority must agree
//	fair       fair.Lock: waiters queue in Redis, a release hands off to the first
//	fenced     a lease with a fencing token, checked by PostgreSQL (step 5)
//	atomic     no lock: the work, then one Lua script that checks and takes
//	version    PostgreSQL only: writes that must match the version they read
//	forupdate  PostgreSQL only: SELECT ... FOR UPDATE in a transaction
//
// For each it reports the rate of accepted spends, the attempts and
// refusals, lock-wait and spend latencies (HDR histograms), the Redis
// commands each accepted spend cost (as Redis counts them, and as the run
// sent them), and how close it came to the ceiling: the best rate the
// workload allows on this machine, from the round-trip times measured at
// the start (see Ceiling). Beside the ceiling, each rate is set against
// none's in the same run, and each p99 lock wait against the wait of a
// queue served in turn (Row.FIFOBound).
//
// Config.Sweep runs every strategy at several worker counts, one after
// another: the contention sweep, one row per strategy and count.
//
// A spend whose write was sent but never answered (a timeout, a frozen
// server) may have landed or not: it is counted apart as unknown, and each
// wallet is judged with wallet.Check (ledger.Judge), which allows any number of
// them to have landed. A row that accepted nothing, or whose spends failed
// too often, measured nothing and says so (Row.Measured).
//
// A run owns what it writes (see Run). Run is the whole of it;
// cmd/loadtest declares its flags with AddFlags, dials with Flags.Dial,
// judges each row and ends with Flags.Finish, which writes the -html page
// (internal/charts).
package loadtest
