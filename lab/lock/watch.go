package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Watch keeps the lock alive while work runs: it refreshes the lease to
// ttl every third of ttl, and the first failed refresh cancels the
// context it returns, with context.Cause saying why: ErrNotHeld, an error
// matching ErrUnknown (no reply: nobody can vouch for the lease), or the
// Redis error.
//
// Call it right after acquiring, with the lock's TTL, and do the work with
// the returned context. Release stops the watchdog first, so
// `defer l.Release(ctx)` is all the clean-up a watched lock needs; the
// returned cancel stops watching without releasing, and waits for the
// watchdog to end. Calling both, in either order, is fine. A nil or zero
// Lock, or a ttl under 1 ms, cancels the context at once (ErrNotHeld, or
// an error matching ErrInvalid).
func (l *Lock) Watch(parent context.Context, ttl time.Duration) (context.Context, context.CancelFunc) {
	if err := l.held(); err != nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(err)
		return ctx, func() {}
	}
	ctx, stop := KeepAlive(parent, ttl, func(ctx context.Context) error { return l.Refresh(ctx, ttl) })
	l.hold.watchdogs.add(stop)
	return ctx, stop
}

// watchdogs holds the stop funcs of a Lock's Watch calls for Release to
// call first: a watchdog left running would find the key gone and cancel
// the work with ErrNotHeld, as if the lease had been lost.
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
// call (the load test's redislock and Redlock). Every ttl/3 it calls
// refresh, bounded by ttl/3 so that a hung call is abandoned while the
// lease still has a third of its TTL left; the first failure cancels the
// returned context with the error as its cause (refresh returns an error
// matching ErrNotHeld when the lease is gone). The returned cancel stops
// the watchdog and waits for it. A ttl under 1 ms cancels the context at
// once; a nil refresh panics at once, in the caller's goroutine.
func KeepAlive(parent context.Context, ttl time.Duration, refresh func(ctx context.Context) error) (context.Context, context.CancelFunc) {
	return keepAlive(parent, ttl, refresh, false)
}

// KeepAliveRetrying is KeepAlive for a lease that must outlive a Redis
// that stalls for a few seconds, or a failover (the lab's run lease). A
// refresh that fails with anything but ErrNotHeld is tried again every
// RetryEvery, and the context is cancelled only when none got through for
// a whole ttl since the sending of the last that did (which keeps the
// lease alive until then). A refresh is idempotent, so retrying is safe.
func KeepAliveRetrying(parent context.Context, ttl time.Duration, refresh func(ctx context.Context) error) (context.Context, context.CancelFunc) {
	return keepAlive(parent, ttl, refresh, true)
}

// RetryEvery is how soon KeepAliveRetrying sends a refresh that failed
// again (sooner for a ttl under 600ms: a twelfth of it).
const RetryEvery = 200 * time.Millisecond

// keepAlive is KeepAlive, and with retry KeepAliveRetrying.
func keepAlive(parent context.Context, ttl time.Duration, refresh func(ctx context.Context) error, retry bool) (context.Context, context.CancelFunc) {
	if refresh == nil {
		panic("lock: KeepAlive called with a nil refresh func")
	}
	ctx, cancel := context.WithCancelCause(parent)
	if err := CheckTTL(ttl); err != nil {
		cancel(err)
		return ctx, func() {}
	}
	every := ttl / 3
	again := min(RetryEvery, every/4)
	var wg sync.WaitGroup
	wg.Go(func() {
		// lastSent is when the last refresh that got through was sent
		// (at first: about when the lease was taken); the lease lives at
		// least until lastSent+ttl. Refreshes go out every third of the
		// TTL from there, however long each took.
		lastSent := time.Now()
		t := time.NewTimer(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			sent := time.Now()
			rctx, rcancel := context.WithTimeout(ctx, every)
			err := refresh(rctx)
			rcancel()
			switch {
			case err == nil:
				lastSent = sent
				t.Reset(time.Until(sent.Add(every)))
				continue
			case ctx.Err() != nil:
				return // the work ended (or its parent did) meanwhile
			case retry && !errors.Is(err, ErrNotHeld) && time.Since(lastSent) < ttl:
				t.Reset(again)
				continue
			}
			if errors.Is(err, context.DeadlineExceeded) {
				err = fmt.Errorf("lock: refresh took longer than %v, a third of the TTL: %w", every, err)
			}
			if retry && !errors.Is(err, ErrNotHeld) {
				err = fmt.Errorf("lock: no refresh got through for %v, the TTL: %w", ttl, err)
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
