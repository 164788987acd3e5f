// The run lease makes a run the only user of its key prefix while it
// runs, with the repo's own lock: a lease on the key prefix+"run" that a
// watchdog keeps alive. A second run on the same prefix is refused at once,
// instead of resetting and deleting the first run's keys; PostgreSQL rows
// carry the prefix as their owner (postgres.Store.Owned), so runs on other
// prefixes cannot touch them either.
//
// A run that dies leaves the lease to expire on its own within LeaseTTL.

package harness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
)

// LeaseTTL is the lease's time to live: how long a crashed run keeps its prefix
// from the next one. The watchdog refreshes it every LeaseTTL/3 and rides out a
// Redis that stalls for less than LeaseTTL.
const LeaseTTL = 10 * time.Second

// takeTimeout bounds Take: a check and a SET NX, slow on a loaded machine,
// but never a wait for another run's lease.
const takeTimeout = 3 * time.Second

// ErrBusy means another run holds the prefix.
var ErrBusy = errors.New("runlease: prefix in use by another run")

// Client is what a lease needs from go-redis: the lock's commands and
// EXISTS. *redis.Client and *redis.ClusterClient satisfy it.
type LeaseClient interface {
	lock.Client
	Exists(ctx context.Context, keys ...string) *redis.IntCmd
}

// Key is the key of the lease on prefix.
func LeaseKey(prefix string) string { return prefix + "run" }

// Lease is a run's hold on its prefix. Context is cancelled when the lease
// is lost (another holder has the key, or no refresh got through for a whole
// LeaseTTL), with the reason as its cause; the run should stop then, as its keys
// are no longer its own.
type Lease struct {
	lock *lock.Lock
	ctx  context.Context
	stop context.CancelFunc
}

// Take acquires the lease on prefix. It returns an error matching ErrBusy
// at once when another run holds it, naming the prefix and what to do.
func TakeLease(ctx context.Context, rdb LeaseClient, prefix string) (*Lease, error) {
	tctx, cancel := context.WithTimeout(ctx, takeTimeout)
	defer cancel()
	busy := fmt.Errorf("%w: %q; wait for that run to end (or %v after it died), or choose another with -prefix", ErrBusy, prefix, LeaseTTL)
	held, err := rdb.Exists(tctx, LeaseKey(prefix)).Result()
	if err != nil {
		return nil, fmt.Errorf("runlease: take %s: %w", LeaseKey(prefix), err)
	}
	if held > 0 {
		return nil, busy
	}
	l, err := lock.Acquire(tctx, rdb, LeaseKey(prefix), LeaseTTL)
	if err != nil {
		// Another run took it between the check and the SET (Acquire then
		// waits until tctx ends), or Redis was too slow to answer.
		if n, xerr := rdb.Exists(tctx, LeaseKey(prefix)).Result(); ctx.Err() == nil && xerr == nil && n > 0 {
			return nil, busy
		}
		return nil, fmt.Errorf("runlease: take %s: %w", LeaseKey(prefix), err)
	}
	// lock's one watchdog, with a refresh that forgives a stall: a failed
	// refresh while the lease still has time left is tried again every
	// retryEvery, so a Redis frozen for a few seconds, or a cluster
	// promoting the replica of the lease's master, does not end the run.
	// (The lease key reached that replica long ago, and each refresh
	// reaches it within a moment: the promoted replica holds the lease
	// until lastSent+LeaseTTL at the earliest.) A refresh that finds the lease
	// gone (ErrNotHeld) ends it at once, and so does a whole LeaseTTL without
	// one that got through: the lease may have expired by then.
	lastSent := time.Now()
	wctx, stop := lock.KeepAlive(context.Background(), LeaseTTL, func(ctx context.Context) error {
		for {
			sent := time.Now()
			err := l.Refresh(ctx)
			switch {
			case err == nil:
				lastSent = sent
				return nil
			case errors.Is(err, lock.ErrNotHeld), time.Since(lastSent) >= LeaseTTL:
				return err
			}
			select {
			case <-ctx.Done(): // the watchdog's next tick tries again
				return nil
			case <-time.After(retryEvery):
			}
		}
	})
	return &Lease{lock: l, ctx: wctx, stop: stop}, nil
}

// retryEvery is how soon a refresh or release that got no answer is sent
// again. Both may be: a refresh twice extends the lease twice, and a
// release whose first try landed finds the lease gone, which Close takes
// as released.
const retryEvery = 200 * time.Millisecond

// Context is cancelled when the lease is lost.
func (l *Lease) Context() context.Context { return l.ctx }

// Close stops the watchdog and releases the lease, trying again every
// retryEvery while Redis does not answer (a failover under way), until
// ctx ends or for LeaseTTL at most: a lease not given back expires within LeaseTTL.
// Call it after the run has deleted its keys and rows. It is safe on a nil
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
		case <-time.After(retryEvery):
		}
	}
}
