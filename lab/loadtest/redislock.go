package loadtest

// The redislock strategy: github.com/bsm/redislock v0.10.0, held to the
// rules of package lock. The library leaves a few things to its caller;
// each function here takes one of them on, and their errors are lock's
// sentinels, so that the load test tells them apart as for lock.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"

	"example.com/walletlock/lab/lock"
)

// obtainRedislock takes the lock on key with redislock, after the checks
// redislock does not make. Given a TTL under 1 ms and a ctx with a
// deadline, redislock v0.10.0 runs SET and then PEXPIRE 0, which deletes
// the key, and returns a lock while nothing is held: here such a TTL (and
// an empty key, a nil client) fails with lock.ErrInvalid first. The TTL
// is rounded up to whole milliseconds, as lock.Acquire does, never down.
//
// Bound the wait with a ctx deadline: without one, redislock stops
// retrying after ttl. When the deadline cuts a call to Redis short, the
// lease it may still have taken is deleted before returning; redislock
// alone would leave it to block everyone until its TTL ran out.
// opt.RetryStrategy must be fresh for each call: redislock's strategies
// count retries inside the value.
//
// When the wait ran out the error matches ctx.Err() (or
// context.DeadlineExceeded without a deadline), and also
// redislock.ErrNotObtained when it ran out between two attempts: test for
// the context first. The retry strategy giving up is ErrNotObtained
// alone; anything else is a Redis error. Each is one line naming the key
// (redislock's own joined error spans two).
func obtainRedislock(ctx context.Context, rdb redislock.RedisClient, key string, ttl time.Duration, opt *redislock.Options) (*redislock.Lock, error) {
	ttl, err := lock.CheckArgs(rdb, key, ttl)
	if err != nil {
		return nil, err
	}
	// Choose the token here rather than let redislock do it, so that a call
	// cut short by ctx can be cleaned up below. Copy opt: it is the caller's.
	o := redislock.Options{Token: rand.Text()}
	if opt != nil {
		o = *opt
		if o.Token == "" {
			o.Token = rand.Text()
		}
	}
	l, err := redislock.New(rdb).Obtain(ctx, key, ttl, &o)
	if err == nil {
		return l, nil
	}
	// The wait ran out: ctx ended, or the deadline redislock set itself
	// (now+ttl) because ctx had none.
	gaveUp := fmt.Sprintf("redislock: obtain %s: gave up waiting", key)
	cause := ctx.Err()
	if cause == nil && errors.Is(err, context.DeadlineExceeded) {
		gaveUp += fmt.Sprintf(" after the TTL (%v), as ctx had no deadline", ttl)
		cause = context.DeadlineExceeded
	}
	switch {
	case cause != nil && errors.Is(err, redislock.ErrNotObtained):
		// It ran out between two attempts: redislock returned
		// errors.Join(ErrNotObtained, ctx.Err()), a two-line message.
		return nil, fmt.Errorf("%s: %w: %w", gaveUp, redislock.ErrNotObtained, cause)
	case cause != nil:
		// It cut a call to Redis short, and Redis may still have run it:
		// delete what might be ours, so that no orphan lease blocks the
		// others until its TTL runs out. redislock stores token+metadata.
		// There is no *redislock.Lock to Release (redislock returns none
		// with an error), so lock's compare-and-delete does it.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lock.ReleaseTimeout)
		lock.DeleteIf(cctx, rdb, key, o.Token+o.Metadata)
		cancel()
		return nil, fmt.Errorf("%s: %w", gaveUp, cause)
	case errors.Is(err, redislock.ErrNotObtained):
		return nil, fmt.Errorf("redislock: obtain %s: retry strategy gave up: %w", key, err)
	default:
		return nil, fmt.Errorf("redislock: obtain %s: %w", key, err)
	}
}

// refreshRedislock returns a refresh call for lock.KeepAlive, redislock's
// watchdog (it has none of its own), that gives l a fresh ttl, rounded up
// to whole milliseconds. A lease that is gone, for which redislock's
// Refresh returns ErrNotObtained, is lock.ErrNotHeld here, so that
// context.Cause reads the same for both locks; so is a nil or zero l. A
// ttl under 1 ms is lock.ErrInvalid (redislock would send PEXPIRE 0, which
// deletes the lock).
func refreshRedislock(l *redislock.Lock, ttl time.Duration) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		if l == nil || l.Token() == "" {
			return lock.ErrNotHeld
		}
		// What obtainRedislock refused, and the TTL rounded as it sends it.
		ttl, err := lock.CheckArgs(l, l.Key(), ttl)
		if err != nil {
			return err
		}
		err = l.Refresh(ctx, ttl, nil)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, redislock.ErrNotObtained):
			return lock.ErrNotHeld
		default:
			return fmt.Errorf("redislock: refresh %s: %w", l.Key(), err)
		}
	}
}

// countingRetry is a redislock.RetryStrategy that passes the waits of
// Strategy through and counts how often redislock asked for one: once
// after every attempt that found the lock held, so an Obtain that
// returned the lock made busy+1 attempts. Use one per Obtain.
type countingRetry struct {
	Strategy redislock.RetryStrategy
	busy     atomic.Int64
}

// NextBackoff counts the call and returns Strategy's wait.
func (c *countingRetry) NextBackoff() time.Duration {
	c.busy.Add(1)
	return c.Strategy.NextBackoff()
}
