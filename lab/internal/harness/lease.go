// The run lease makes a run the only user of its key prefix while it
// runs: a lock of package lock on prefix+"run". A second run on the same
// prefix is refused at once, instead of resetting and deleting the first
// run's keys. A long run must not end because Redis froze for a few
// seconds or failed over: so the lease's refreshes are retried for up to
// LeaseTTL (lock.KeepAliveRetrying), and Close sends a release that got
// no answer again until it gets one. A run that dies leaves the lease to
// expire within LeaseTTL.

package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/lab/lock"
)

// LeaseTTL is the lease's time to live: how long a crashed run keeps its
// prefix from the next one.
const LeaseTTL = 10 * time.Second

// takeTimeout bounds Take: a SET NX, slow on a loaded machine, but never a
// wait for another run's lease.
const takeTimeout = 3 * time.Second

// ErrBusy means another run holds the prefix.
var ErrBusy = errors.New("runlease: prefix in use by another run")

// LeaseKey is the key of the lease on prefix.
func LeaseKey(prefix string) string { return prefix + "run" }

// Lease is a run's hold on its prefix. Context is cancelled when the lease
// is lost (another holder has the key, or no refresh got through for a whole
// LeaseTTL), with the reason as its cause; the run should stop then, as its keys
// are no longer its own.
type Lease struct {
	lock *lock.Lock
	ctx  context.Context
	stop context.CancelFunc // stops the watchdog and waits for it
}

// TakeLease acquires the lease on prefix. It returns an error matching
// ErrBusy at once when another run holds it, naming the prefix and what
// to do. A SET whose reply was lost but which landed counts as taken (see
// lock.TryAcquire).
func TakeLease(ctx context.Context, rdb lock.Client, prefix string) (*Lease, error) {
	tctx, cancel := context.WithTimeout(ctx, takeTimeout)
	defer cancel()
	key := LeaseKey(prefix)
	l, err := lock.TryAcquire(tctx, rdb, key, LeaseTTL)
	switch {
	case errors.Is(err, lock.ErrTaken):
		return nil, fmt.Errorf("%w: %q; wait for that run to end (or %v after it died), or choose another with -prefix", ErrBusy, prefix, LeaseTTL)
	case err != nil:
		return nil, fmt.Errorf("runlease: take %s: %w", key, err)
	}
	ctx, stop := lock.KeepAliveRetrying(context.Background(), LeaseTTL, func(ctx context.Context) error {
		err := l.Refresh(ctx, LeaseTTL)
		if errors.Is(err, lock.ErrNotHeld) {
			return fmt.Errorf("runlease: %s is gone (it expired, or someone deleted it): %w", key, err)
		}
		return err
	})
	return &Lease{lock: l, ctx: ctx, stop: stop}, nil
}

// Context is cancelled when the lease is lost.
func (l *Lease) Context() context.Context { return l.ctx }

// Close stops the watchdog and releases the lease, after the run has
// deleted its keys and rows. A release that got no answer (a failover
// under way) is sent again every lock.RetryEvery, for LeaseTTL at most, until
// one says the lease is gone: a release that finds the key no longer ours
// means a first try deleted it, or it expired. It is safe on a nil
// *Lease.
func (l *Lease) Close(ctx context.Context) error {
	if l == nil {
		return nil
	}
	l.stop()
	ctx, cancel := context.WithTimeout(ctx, LeaseTTL)
	defer cancel()
	for {
		err := l.lock.Release(ctx)
		if err == nil || errors.Is(err, lock.ErrNotHeld) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runlease: release %s: %w", l.lock.Key, err)
		case <-time.After(lock.RetryEvery):
		}
	}
}
