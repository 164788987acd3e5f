package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Watch keeps the lock alive while work runs: it refreshes the lease every
// third of the lock's TTL and returns a context for the work; the first
// failed refresh cancels that context. context.Cause then says why:
// ErrNotHeld when the lease was lost to expiry or another holder, an error
// matching ErrUnknown when a refresh got no reply (the lease may still
// run, but nobody can vouch for it), the Redis error otherwise.
//
// Call it right after acquiring and do the protected work with the
// returned context. Release stops the watchdog before it deletes the key,
// so `defer l.Release(ctx)` is all the clean-up a watched lock needs; the
// returned cancel stops watching without releasing, and waits for the
// watchdog's goroutine to end. Calling both, in either order, is fine.
//
// A nil or zero Lock holds nothing: its context is cancelled at once with
// ErrNotHeld as the cause.
func (l *Lock) Watch(parent context.Context) (context.Context, context.CancelFunc) {
	if err := l.held(); err != nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(err)
		return ctx, func() {}
	}
	ctx, stop := KeepAlive(parent, l.hold.ttl, l.Refresh)
	l.hold.watchdogs.add(stop)
	return ctx, stop
}

// watchdogs holds the stop funcs of a Lock's Watch calls, so that Release
// can stop them before it deletes the key: a watchdog left running would
// find the key gone at its next refresh and cancel the work with
// ErrNotHeld, as if the lease had been lost.
type watchdogs struct {
	mu    sync.Mutex
	stops []context.CancelFunc
}

func (w *watchdogs) add(stop context.CancelFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stops = append(w.stops, stop)
}

// stop stops every watchdog and waits for their goroutines to end.
func (w *watchdogs) stop() {
	if w == nil {
		return
	}
	w.mu.Lock()
	stops := w.stops
	w.stops = nil
	w.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// KeepAlive is the watchdog behind Watch, for any lease that has a refresh
// call (step 4 uses it with a bsm/redislock lock). ttl is the lease's TTL. Every ttl/3 it calls
// refresh with a context bounded by ttl/3, so that a hung call is abandoned
// while the lease still has a third of its TTL left; the first failure
// cancels the returned context with the error as its cause.
//
// refresh should return ErrNotHeld (or an error wrapping it) when the
// lease is gone. The returned cancel stops the watchdog and waits for it.
// A ttl under 1 ms cancels the context at once with an error matching
// ErrInvalid. A nil
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
