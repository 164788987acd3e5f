package judge

import (
	"context"
	"errors"
	"time"
)

// Lock is the lock under judgement, behind an adapter of a few lines: it
// takes a lease on key for ttl, waiting while someone else holds it,
// until ctx ends.
type Lock interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
}

// Lease is what Acquire returned. Release gives it back. Refresh sets its
// TTL to ttl again while it is still this lease's; a lock that has no
// refresh returns ErrNotClaimed, and the judge marks refresh's
// properties "not claimed". Both return an error matching ErrNotHeld when
// the lock answered that the lease was gone (expired, or another's).
type Lease interface {
	Release(ctx context.Context) error
	Refresh(ctx context.Context, ttl time.Duration) error
}

// Watcher is a Lease with a watchdog: Watch keeps the lease alive while the
// work runs, and cancels the context it returns as soon as the lease is
// lost. stop ends the watchdog.
type Watcher interface {
	Watch(ctx context.Context, ttl time.Duration) (work context.Context, stop context.CancelFunc)
}

// Fencer is a Lease with a fencing token: a number that grows with every
// lease granted on the key, for the database to check.
type Fencer interface {
	Fence() int64
}

// FencedLock is a Lock that hands out fencing tokens: AcquireFenced returns
// a Lease that is a Fencer.
type FencedLock interface {
	AcquireFenced(ctx context.Context, key string, ttl time.Duration) (Lease, error)
}

var (
	// ErrNotHeld is what an adapter wraps the lock's own "not held"
	// answer in (errors.Is), so that the judge can tell that answer from
	// a lost reply.
	ErrNotHeld = errors.New("judge: not held")

	// ErrNotClaimed is what a Lease's Refresh returns when the lock has
	// no refresh.
	ErrNotClaimed = errors.New("judge: not claimed by this lock")
)

// Adapter names a lock and makes it on the Redis the judge gives it. New
// runs in every holder process the judge starts.
type Adapter struct {
	Name string
	New  func(r Redis) (Lock, error)
	// ServerArgs go on the command line of the redis-server that the
	// judge restarts (see the restart check): a mutant's one change
	// there, "--appendonly", "no".
	ServerArgs []string
}
