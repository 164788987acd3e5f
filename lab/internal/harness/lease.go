// The run lease makes a run the only user of its key prefix while it
// runs: a key, prefix+"run", set with SET NX PX to a random token of the
// run's, kept alive by a watchdog, deleted only by the run whose token it
// holds. A second run on the same prefix is refused at once, instead of
// resetting and deleting the first run's keys; PostgreSQL rows carry the
// prefix as their owner (postgres.Store.Owned), so runs on other prefixes
// cannot touch them either.
//
// It is written here with plain commands rather than with package lock:
// it sends a refresh or a release that got no answer again (see watch and
// Close), so that a Redis frozen for a few seconds, or a failover, does
// not end a long run.
//
// A run that dies leaves the lease to expire on its own within LeaseTTL.

package harness

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// LeaseTTL is the lease's time to live: how long a crashed run keeps its prefix
// from the next one. The watchdog refreshes it every LeaseTTL/3 and rides out a
// Redis that stalls for less than LeaseTTL.
const LeaseTTL = 10 * time.Second

// takeTimeout bounds Take: a SET NX, slow on a loaded machine, but never a
// wait for another run's lease.
const takeTimeout = 3 * time.Second

// ErrBusy means another run holds the prefix.
var ErrBusy = errors.New("runlease: prefix in use by another run")

// errLost ends a lease whose key holds another token, or none.
var errLost = errors.New("runlease: the lease is gone (it expired, or someone deleted its key)")

// LeaseKey is the key of the lease on prefix.
func LeaseKey(prefix string) string { return prefix + "run" }

// The lease's two scripts act only while KEYS[1] holds the run's token.
var (
	//go:embed lease_extend.lua
	extendSrc   string
	extendLease = redis.NewScript(extendSrc)
	//go:embed lease_drop.lua
	dropSrc   string
	dropLease = redis.NewScript(dropSrc)
)

// Lease is a run's hold on its prefix. Context is cancelled when the lease
// is lost (another holder has the key, or no refresh got through for a whole
// LeaseTTL), with the reason as its cause; the run should stop then, as its keys
// are no longer its own.
type Lease struct {
	rdb        redis.Cmdable
	key, token string
	ctx        context.Context
	lost       context.CancelCauseFunc // ends ctx
	stop       context.CancelFunc      // stops the watchdog
	done       chan struct{}           // closed when the watchdog has stopped
}

// TakeLease acquires the lease on prefix. It returns an error matching
// ErrBusy at once when another run holds it, naming the prefix and what
// to do.
func TakeLease(ctx context.Context, rdb redis.Cmdable, prefix string) (*Lease, error) {
	tctx, cancel := context.WithTimeout(ctx, takeTimeout)
	defer cancel()
	l := &Lease{rdb: rdb, key: LeaseKey(prefix), token: rand.Text(), done: make(chan struct{})}
	took, err := rdb.SetNX(tctx, l.key, l.token, LeaseTTL).Result()
	if err != nil {
		// A SET whose reply was lost may have landed: the key then holds
		// our token, and the lease is ours after all.
		if held, gerr := rdb.Get(tctx, l.key).Result(); gerr != nil || held != l.token {
			return nil, fmt.Errorf("runlease: take %s: %w", l.key, err)
		}
		took = true
	}
	if !took {
		return nil, fmt.Errorf("%w: %q; wait for that run to end (or %v after it died), or choose another with -prefix", ErrBusy, prefix, LeaseTTL)
	}
	l.ctx, l.lost = context.WithCancelCause(context.Background())
	wctx, stop := context.WithCancel(context.Background())
	l.stop = stop
	go l.watch(wctx)
	return l, nil
}

// watch refreshes the lease every LeaseTTL/3 until stopped. A refresh that
// fails while the lease still has time left is tried again every
// retryEvery, so a Redis frozen for a few seconds, or a cluster promoting
// the replica of the lease's master, does not end the run. (The lease key
// reached that replica long ago, and each refresh reaches it within a
// moment: the promoted replica holds the lease until lastSent+LeaseTTL at
// the earliest.) A refresh that finds the key without the run's token ends
// the lease at once, and so does a whole LeaseTTL without one that got
// through: the lease may have expired by then.
func (l *Lease) watch(ctx context.Context) {
	defer close(l.done)
	lastSent := time.Now()
	next := time.After(LeaseTTL / 3)
	for {
		select {
		case <-ctx.Done():
			return
		case <-next:
		}
		sent := time.Now()
		rctx, cancel := context.WithTimeout(ctx, LeaseTTL/3) // a hung call is abandoned, and tried again
		n, err := extendLease.Run(rctx, l.rdb, []string{l.key}, l.token, LeaseTTL.Milliseconds()).Int()
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil && n == 0:
			l.lost(errLost)
			return
		case err == nil:
			lastSent, next = sent, time.After(LeaseTTL/3)
		case time.Since(lastSent) >= LeaseTTL:
			l.lost(fmt.Errorf("runlease: no refresh of %s got through for %v: %w", l.key, LeaseTTL, err))
			return
		default:
			next = time.After(retryEvery)
		}
	}
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
	<-l.done
	defer l.lost(nil)
	ctx, cancel := context.WithTimeout(ctx, LeaseTTL)
	defer cancel()
	for {
		err := dropLease.Run(ctx, l.rdb, []string{l.key}, l.token).Err()
		if err == nil { // deleted, or found gone: either way not ours any more
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runlease: release %s: %w", l.key, err)
		case <-time.After(retryEvery):
		}
	}
}
