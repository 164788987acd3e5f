// Package lock is a lease on a Redis key: SET key token NX PX ttl to take
// it, a token-checked compare-and-delete to give it back.
//
// What a lease guarantees: while the key lives, at most one holder has it,
// and a holder that crashes loses it after ttl, so a dead server never
// blocks the others for good. Release and Refresh check the token in one
// atomic step, so a late holder can never delete or extend a lease that
// has passed to someone else.
//
// What it cannot guarantee: that the holder still holds it. A holder that
// pauses (a long GC, a swapped-out VM, a slow network) can wake after its
// lease expired and another holder took over, with nothing telling it so
// before it writes. Watch narrows that window by refreshing the lease and
// cancelling the work when a refresh fails; it cannot close it. When the
// protected write matters (money), have the database refuse stale writes:
// AcquireFenced hands out a fencing token, a number that grows with every
// acquisition, for the database to check (see step 5).
//
// Two ways to wait for a lease that someone else holds. Acquire polls: it
// retries every 5 to 15 ms, and whoever asks first after a release wins,
// which under contention is most often the holder that just released.
// The fair lock, in package lock/fair (fair.New(rdb), then f.Acquire),
// queues its waiters in Redis and a release hands the lease straight to
// the first of them, who hears of it over pub/sub. Pick Acquire when
// contention is rare: it is one call and needs nothing else. Pick the
// fair lock for a key that many want at once: every waiter gets its
// turn, the lease never lies idle between two holders, and a waiter asks
// Redis once instead of every 10 ms. Both hand out the same *Lock, with
// the same guarantees.
//
// A single Redis node is assumed. With asynchronous replication a failover
// can lose a lease that a replica had not yet received.
package lock
