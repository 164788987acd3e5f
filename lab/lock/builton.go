package lock

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// What a lock built on this one needs: package lock/fair hands out the
// same *Lock as Acquire, released by a hand-off script of its own, and
// refuses what Acquire refuses with the same errors.

// Handoff is how a Lock that another lock type handed out is released:
// lock/fair's script, which passes the lock to the next waiter, instead of
// a plain compare-and-delete. Release, ReleaseLua and ReleaseAfter call it.
type Handoff interface {
	// Release runs the hand-off for token, sent once and resent by
	// Release itself after a lost reply, bounded as Release is. It
	// returns what Release returns.
	Release(ctx context.Context, token string) error
	// Queue queues the hand-off for token in p, sent at most once, for
	// ReleaseAfter. The command's reply is 1 when the lock was token's,
	// 0 otherwise.
	Queue(ctx context.Context, p redis.Pipeliner, token string) *redis.Cmd
}

// Adopt returns the Lock of a lease on key that token holds on rdb, taken
// after attempts tries by another acquirer, with fence (0 for none), and
// released through h.
func Adopt(rdb Client, key, token string, attempts int, fence int64, h Handoff) *Lock {
	l := newLock(rdb, key, token, attempts)
	l.Fence, l.hold.handoff = fence, h
	return l
}
