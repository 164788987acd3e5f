// Package fair is a fair lock on Redis: it hands out the same leases as
// lock.Acquire (the same *lock.Lock, with the same guarantees), but its
// waiters take turns. They queue in Redis in the order they arrived, and
// a release hands the lock straight to the first of them, who hears so
// through Redis pub/sub instead of asking again. lock.Acquire polls:
// whoever asks at the right moment wins, and under contention that is
// most often the holder that just released, while the others sleep.
//
//	f := fair.New(rdb) // one for the whole program
//	defer f.Close()
//	l, err := f.Acquire(ctx, "lock:{wallet:42}", 2*time.Second)
//	...
//	defer l.Release(ctx) // hands the lock to the next waiter
//
// Use it when a key is contended and the wait matters: a hot wallet, a
// job that many workers want. Every waiter is served in turn, the lock
// changes hands without a pause, and a waiter asks Redis once, then waits
// to be told, where a polling waiter asks every 5 to 15 ms. Use
// lock.Acquire when contention is rare: it needs no subscription, and
// without contention both take the lock in one round trip. Under
// contention, the round trip between a holder's last write and its
// release is one that every waiter waits for: (*lock.Lock).ReleaseAfter
// sends both at once.
//
// The locks it returns are ordinary *lock.Lock values: Refresh, Watch
// and the TTL rounding work as for lock.Acquire, and Release passes the
// lock to the next waiter. Its script is sent once, never retried by
// go-redis: when its reply is lost, Release sends it again itself, and
// returns an error matching lock.ErrUnknown, not lock.ErrNotHeld, if the
// lock was gone by then (the first may have handed it on). Do not mix
// lock.Acquire and a fair lock on one key: a polling Acquire can take a
// lock that waiters queue for when it is free, and a lock that Acquire
// took is released without a hand-off (the waiters notice within
// 100 ms).
//
// What a lost message costs: every 100 ms one waiter of each Lock on a
// key asks Redis again for all of them: it renews their presence in the
// queue, learns who holds the lock, and serves the queue when the holder
// expired. A release whose message never arrives (the subscription
// dropped, Redis restarted) has still made the waiter the holder, which
// the next two such questions find out; a holder that crashed is
// succeeded within its TTL plus one such wait. The waiters of a process
// that crashes, hangs or loses Redis are skipped once their Lock's
// presence runs out (300 ms); a release that reaches one before then
// hands it the lock, which then stays blocked for that waiter's TTL, as
// it would for a crashed holder.
//
// Why a package of its own: package lock stays the size of a lock
// library (bsm/redislock's), and the fair lock, which is most of the
// code, is read apart from it. It needs three things of lock that lock
// does not export: a *lock.Lock whose Release runs the hand-off script
// instead of a compare-and-delete, lock's own checks and errors for bad
// input and a broken fence counter, and the way lock sends a command
// that must not run twice. They live in lock/internal/core, which only
// lock and this package can import: the send-once helpers are there,
// and lock lends the rest through core.Lend when it loads. lock.Lock
// itself stays a type of package lock, so that go doc shows its methods
// there.
//
// The files: fair.go is the waiting and the queue's keys, notify.go how
// a waiter hears of a hand-off, queue.lua, acquire.lua and release.lua
// the scripts.
package fair
