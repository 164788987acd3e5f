// Package runlease makes a run the only user of its key prefix while it
// runs, with the repo's own lock: a lease on the key prefix+"run" that a
// watchdog keeps alive. A second run on the same prefix is refused at once,
// instead of resetting and deleting the first run's keys; PostgreSQL rows
// carry the prefix as their owner (wallet.Store.Owned), so runs on other
// prefixes cannot touch them either.
//
// A run that dies leaves the lease to expire on its own within TTL.
package runlease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/lock"
)

// TTL is the lease's time to live; its watchdog refreshes it every TTL/3.
// It is how long a crashed run keeps its prefix from the next one.
const TTL = 5 * time.Second

// tryFor is how long Take waits for a lease that another run holds: long
// enough for a few attempts, short enough to answer at once.
const tryFor = 100 * time.Millisecond

// ErrBusy means another run holds the prefix.
var ErrBusy = errors.New("runlease: prefix in use by another run")

// Key is the key of the lease on prefix.
func Key(prefix string) string { return prefix + "run" }

// Lease is a run's hold on its prefix. Context is cancelled when the lease
// is lost (Redis lost it, or a refresh failed), with the reason as its
// cause; the run should stop then, as its keys are no longer its own.
type Lease struct {
	lock *lock.Lock
	ctx  context.Context
	stop context.CancelFunc
}

// Take acquires the lease on prefix. It returns an error matching ErrBusy
// when another run holds it, naming the prefix and what to do.
func Take(ctx context.Context, rdb lock.Client, prefix string) (*Lease, error) {
	tctx, cancel := context.WithTimeout(ctx, tryFor)
	defer cancel()
	l, err := lock.Acquire(tctx, rdb, Key(prefix), TTL)
	switch {
	case err == nil:
	case ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded):
		return nil, fmt.Errorf("%w: prefix %q is in use by another run; wait for it to end (or %v after it died), or choose another with -prefix", ErrBusy, prefix, TTL)
	default:
		return nil, fmt.Errorf("runlease: take %s: %w", Key(prefix), err)
	}
	wctx, stop := l.Watch(context.Background(), TTL)
	return &Lease{lock: l, ctx: wctx, stop: stop}, nil
}

// Context is cancelled when the lease is lost.
func (l *Lease) Context() context.Context { return l.ctx }

// Close stops the watchdog and releases the lease. Call it after the run
// has deleted its keys and rows. It is safe on a nil *Lease.
func (l *Lease) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.stop()
	if err := l.lock.Release(ctx); err != nil && !errors.Is(err, lock.ErrNotHeld) {
		return fmt.Errorf("runlease: release %s: %w", l.lock.Key, err)
	}
	return nil
}
