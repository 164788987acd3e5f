// Package fair is a fair lock on Redis: it hands out the same leases as
// lock.Acquire (the same *lock.Lock, with the same guarantees), but its
// waiters take turns. They queue in Redis in the order they arrived, and a
// release hands the lock straight to the first of them, who reads so from
// a stream instead of asking again. lock.Acquire polls: whoever asks at
// the right moment wins, most often the holder that just released.
//
//	f := fair.New(rdb) // one for the whole program
//	defer f.Close()
//	l, err := f.Acquire(ctx, "lock:{wallet:42}", 2*time.Second)
//	...
//	defer l.Release(ctx) // hands the lock to the next waiter
//
// Use it when a key is contended and the wait matters (a hot wallet);
// without contention both take the lock in one round trip. Release,
// Refresh and Watch work as for lock.Acquire. Do not mix lock.Acquire and
// a fair lock on one key: a polling Acquire can take a free lock that
// waiters queue for, and releases it without a hand-off (the waiters
// notice within a tick, 100 ms).
//
// The parts (docs/fair-lock.md tells each at length): the queue, in
// arrival order; the hand-off stream, which a release appends to and one
// reader per key and process reads, so that a hand-off written while
// nobody read is read later; presence, so that hand-offs skip the waiters
// of a process that died; and the tick, every 100 ms, which renews
// presence, serves the queue when a holder died, and tells a waiter whose
// entry the queue lost to queue again. fair.go is the waiting, notify.go
// the reader, queue.lua, acquire.lua and release.lua the scripts. It
// builds on package lock through Adopt and Handoff (lock's builton.go),
// CheckArgs and FenceRefusal.
package fair
