// Package lock is the article's lock (the root's package lock, with the
// same signatures) plus the guards production adds: a lease on a Redis
// key, SET key token NX PX ttl to take it, a token-checked
// compare-and-delete to give it back.
//
// What a lease guarantees: while the key lives, at most one holder has it,
// and a holder that crashes loses it after ttl. Release and Refresh check
// the token in one atomic step, so a late holder can never delete or
// extend a lease that has passed to someone else.
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
// Acquire polls: whoever asks first after a release wins, most often the
// holder that just released. The fair lock (package lock/fair) queues its
// waiters in Redis and hands the lease to the first: pick it for a key
// that many want at once. Both hand out the same *Lock.
//
// A single Redis node is assumed. With asynchronous replication a failover
// can lose a lease that a replica had not yet received.
package lock
