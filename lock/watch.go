package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Watch keeps the lock alive while work runs: it refreshes the lease every
// ttl/3 and returns a context for the work that is cancelled as soon as a
// refresh fails. context.Cause then says why: ErrNotHeld when the lease was
// lost to expiry or another holder, the Redis error otherwise.
//
// Call it right after acquiring, do the protected work with the returned
// context, and call the returned cancel when the work is done (before
// Release): it stops the watchdog and waits for its goroutine to end.
//
// A nil or zero Lock holds nothing: its context is cancelled at once with
// ErrNotHeld as the cause.
func (l *Lock) Watch(parent context.Context, ttl time.Duration) (context.Context, context.CancelFunc) {
	if err := l.held(); err != nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(err)
		return ctx, func() {}
	}
	return KeepAlive(parent, ttl, func(ctx context.Context) error {
		return l.Refresh(ctx, ttl)
	})
}

// KeepAlive is the watchdog behind Watch, for any lease that has a refresh
// call (step 4 uses it with a bsm/redislock lock). Every ttl/3 it calls
// refresh with a context bounded by ttl/3, so that a hung call is abandoned
// while the lease still has a third of its TTL left; the first failure
// cancels the returned context with the error as its cause.
//
// refresh should return ErrNotHeld (or an error wrapping it) when the
// lease is gone. The returned cancel stops the watchdog and waits for it.
// A ttl under 1 ms cancels the context at once with ErrBadTTL. A nil
// refresh is a bug in the caller: KeepAlive panics at once, in the
// caller's goroutine, rather than crash later in its own.
func KeepAlive(parent context.Context, ttl time.Duration, refresh func(ctx context.Context) error) (context.Context, context.CancelFunc) {
	if refresh == nil {
		panic("lock: KeepAlive called with a nil refresh func")
	}
	ctx, cancel := context.WithCancelCause(parent)
	if err := CheckTTL(ttl); err != nil {
		cancel(err)
		return ctx, func() {}
	}
	every := ttl / 3
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, every)
			err := refresh(rctx)
			rcancel()
			if err == nil {
				continue
			}
			if ctx.Err() != nil {
				return // the work ended (or its parent did) meanwhile
			}
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("lock: refresh took longer than %v, a third of the TTL: %w", every, err)
			}
			cancel(err)
			return
		}
	})
	return ctx, func() {
		cancel(context.Canceled)
		wg.Wait()
	}
}
