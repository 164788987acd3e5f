package loadtest

// The redislock strategy: github.com/bsm/redislock v0.10.0 as this repo
// uses it, beside the hand-built lock. It adapts the library to the rules
// of package lock: the library leaves a few things to its caller, and each
// function in this file takes one of them on; their errors are lock's
// sentinels (lock.ErrInvalid, lock.ErrNotHeld...), so that the load test
// tells them apart the same way for both locks.

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
// redislock does not make.
//
// The TTL is checked first: given 0, a negative TTL or one under 1 ms and
// a ctx with a deadline, redislock v0.10.0 runs SET and then PEXPIRE with
// 0 or less, which deletes the key, and returns a lock with a nil error
// while nothing is held in Redis. Here such a TTL (and an empty key, and a
// nil client) fails with an error matching lock.ErrInvalid before any
// call to Redis. redislock cuts a TTL down to whole
// milliseconds; here it is rounded up instead, as Acquire does (see
// lock.CheckTTL), so the lease is never shorter than asked.
//
// Bound the wait with a ctx deadline. Without one, redislock quietly stops
// retrying after ttl, however long the retry strategy would go on. When
// the deadline cuts a call to Redis short, the lease that call may still
// have taken is deleted before Obtain returns; redislock alone
// would leave it to block everyone until its TTL ran out.
//
// opt.RetryStrategy must be a fresh value for each call: ExponentialBackoff
// and LimitRetry count retries inside the value, so one value shared by
// several Obtains makes each one's waits depend on the others.
//
// Errors, told apart with errors.Is:
//   - the wait ran out: the error matches ctx.Err() (or, when ctx had no
//     deadline, context.DeadlineExceeded), and also
//     redislock.ErrNotObtained when it ran out between two attempts. Test
//     for the context first, since both match.
//   - the retry strategy gave up: redislock.ErrNotObtained alone.
//   - anything else is a Redis error, returned at once.
//
// All are one line (redislock's own joined error spans two) and name the
// key.
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

// refreshRedislock returns a refresh call for KeepAlive that gives l a
// fresh ttl. redislock has no watchdog of its own; this is how it gets the
// one lock.Lock.Watch uses:
//
//	wctx, stop := lock.KeepAlive(ctx, ttl, refreshRedislock(l, ttl))
//	defer stop()
//
// When the lease is gone, redislock's Refresh returns ErrNotObtained (not
// ErrLockNotHeld, which only Release returns); it becomes lock.ErrNotHeld here,
// so context.Cause reads the same for both locks. Refresh makes a single
// attempt: KeepAlive bounds it and cancels the work on the first failure.
// The ttl is rounded up to whole milliseconds (see lock.CheckTTL). A nil
// or zero l (one that no Obtain returned) is never held: its refresh
// returns lock.ErrNotHeld without a call to Redis, and a ttl under 1 ms
// returns an error matching lock.ErrInvalid (redislock would send PEXPIRE
// 0, which deletes the lock).
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
// Strategy through and counts how often redislock asked for one. redislock
// asks once after every attempt that found the lock held, so an Obtain
// that returned the lock made Busy()+1 attempts.
//
// Use one per Obtain, like the strategy it wraps. Busy may be read from
// another goroutine while the Obtain runs.
type countingRetry struct {
	Strategy redislock.RetryStrategy
	busy     atomic.Int64
}

// NextBackoff counts the call and returns Strategy's wait.
func (c *countingRetry) NextBackoff() time.Duration {
	c.busy.Add(1)
	return c.Strategy.NextBackoff()
}

// Busy returns how many attempts so far found the lock held.
func (c *countingRetry) Busy() int { return int(c.busy.Load()) }
