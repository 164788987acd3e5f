package lock_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
)

func TestWatch_keepsTheLeaseAliveThenCancelsWhenLost(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	// A TTL well above a Redis round trip on a loaded machine: each
	// refresh may take up to ttl/3 = 200 ms before the watchdog gives up.
	const ttl = 600 * time.Millisecond
	l := mustAcquire(t, rdb, key, ttl)
	ctx, cancel := l.Watch(context.Background(), ttl)
	defer cancel()

	// Without the watchdog the key would be gone after one TTL.
	time.Sleep(5 * ttl)
	if err := ctx.Err(); err != nil {
		t.Fatalf("the watch context ended while the lease was ours: %v (cause %v)", err, context.Cause(ctx))
	}
	if got := holder(t, rdb, key); got != lock.TokenOf(l) {
		t.Fatalf("after 5 TTLs the key holds %q, want our token", got)
	}

	// Another client deletes the key: the lease is lost, and the next
	// refresh must say so by cancelling the work's context.
	lost := time.Now()
	if err := rdb.Del(labtest.Context(t, 5*time.Second), key).Err(); err != nil {
		t.Fatal(err)
	}
	waitDone(t, ctx, 10*time.Second)
	// Expected: within ttl/3 (the next refresh) plus one round trip. The
	// bound is about correctness (the work learns before a TTL would have
	// run out twice), not speed.
	if took := time.Since(lost); took > 2*ttl {
		t.Errorf("the watch context ended %v after the key was deleted, want under %v", took, 2*ttl)
	}
	if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrNotHeld) {
		t.Errorf("cause = %v, want ErrNotHeld", cause)
	}
	if n := rdb.Exists(labtest.Context(t, 5*time.Second), key).Val(); n != 0 {
		t.Error("the watchdog brought the key back")
	}
}

func TestWatch_parentEndsTheWork(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	l := mustAcquire(t, rdb, key, 10*time.Second)
	defer l.Release(labtest.Context(t, 5*time.Second))
	parent, stop := context.WithCancelCause(context.Background())
	ctx, cancel := l.Watch(parent, 10*time.Second)
	defer cancel()
	shutdown := errors.New("test: shutting down")
	stop(shutdown)
	waitDone(t, ctx, 10*time.Second)
	if cause := context.Cause(ctx); cause != shutdown {
		t.Errorf("cause = %v, want the parent's cause", cause)
	}
}

// waitDone waits for ctx to end and fails the test when it is still live
// after d (fake time inside a synctest bubble), so that a watchdog that
// never cancels fails the test instead of hanging it.
func waitDone(t *testing.T, ctx context.Context, d time.Duration) {
	t.Helper()
	select {
	case <-ctx.Done():
	case <-time.After(d):
		t.Fatalf("the context was still live after %v", d)
	}
}

// watchdogs counts the goroutines running KeepAlive's loop.
func watchdogs() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "lock.keepAlive.func")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// settled waits up to a few seconds for the number of watchdogs to drop
// to want, and returns the last count.
func settled(want int) int {
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := watchdogs()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Not parallel: it counts goroutines, and parallel tests run only once
// every sequential test has finished.
func TestWatch_leavesNoGoroutine(t *testing.T) {
	rdb, key := setup(t)
	before := settled(0)
	const ttl = 600 * time.Millisecond

	// Stopped by its caller.
	l := mustAcquire(t, rdb, key, ttl)
	_, stop := l.Watch(context.Background(), ttl)
	time.Sleep(ttl / 2)
	if n := watchdogs(); n != before+1 {
		t.Errorf("%d watchdogs while watching, want %d", n, before+1)
	}
	stop()
	// stop waits for the goroutine to end, so it is gone (or exiting).
	if n := settled(before); n != before {
		t.Errorf("%d watchdogs after cancel, want %d", n, before)
	}
	if err := l.Release(labtest.Context(t, 5*time.Second)); err != nil {
		t.Errorf("Release after cancel: %v", err)
	}

	// Stopped by losing the lease, with nobody calling cancel.
	l = mustAcquire(t, rdb, key, ttl)
	ctx, cancel := l.Watch(context.Background(), ttl)
	defer cancel() // only after the checks below
	rdb.Del(labtest.Context(t, 5*time.Second), key)
	waitDone(t, ctx, 10*time.Second)
	if n := settled(before); n != before {
		t.Errorf("%d watchdogs after the lease was lost, want %d", n, before)
	}
}

// Release stops the watchdog before it deletes the key, so a caller who
// never calls Watch's cancel leaves no goroutine behind, and the work's
// context ends as cancelled, not as a lost lease.
func TestWatch_releaseStopsTheWatchdog(t *testing.T) {
	rdb, key := setup(t)
	before := settled(0)
	l := mustAcquire(t, rdb, key, 600*time.Millisecond)
	work, _ := l.Watch(context.Background(), 600*time.Millisecond)
	time.Sleep(300 * time.Millisecond) // a refresh or so
	if n := watchdogs(); n != before+1 {
		t.Errorf("%d watchdogs while watching, want %d", n, before+1)
	}
	if err := l.Release(labtest.Context(t, 5*time.Second)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if n := settled(before); n != before {
		t.Errorf("%d watchdogs after Release, want %d", n, before)
	}
	if cause := context.Cause(work); !errors.Is(cause, context.Canceled) {
		t.Errorf("the work's cause after Release = %v, want context.Canceled", cause)
	}
}

// fakeLeaseClient answers the lock's calls from memory, so that synctest
// can run Watch in fake time: SET NX always wins, and the refresh script
// reports success while held is true.
type fakeLeaseClient struct {
	lock.Client // nil: any other call panics
	held        atomic.Bool
	refreshes   atomic.Int64
}

func (f *fakeLeaseClient) SetNX(context.Context, string, any, time.Duration) *redis.BoolCmd {
	f.held.Store(true)
	return redis.NewBoolResult(true, nil)
}

func (f *fakeLeaseClient) EvalSha(context.Context, string, []string, ...any) *redis.Cmd {
	f.refreshes.Add(1)
	if f.held.Load() {
		return redis.NewCmdResult(int64(1), nil)
	}
	return redis.NewCmdResult(int64(0), nil)
}

func TestWatch_refreshesEveryThirdOfTheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLeaseClient{}
		const ttl = 300 * time.Millisecond
		l, err := lock.Acquire(context.Background(), f, "lock:{wallet:1}", ttl)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ctx, cancel := l.Watch(context.Background(), ttl)
		defer cancel()

		time.Sleep(950 * time.Millisecond)
		if n := f.refreshes.Load(); n != 9 {
			t.Errorf("%d refreshes in 950ms, want 9 (one every 100ms)", n)
		}
		if ctx.Err() != nil {
			t.Fatalf("context ended while the lease was held: %v", context.Cause(ctx))
		}

		f.held.Store(false) // the lease is lost
		waitDone(t, ctx, 10*time.Second)
		if took := time.Since(start); took != time.Second {
			t.Errorf("cancelled at %v, want at the next refresh, 1s", took)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrNotHeld) {
			t.Errorf("cause = %v, want ErrNotHeld", cause)
		}
	})
}

func TestKeepAlive_refreshErrorIsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failure := errors.New("test: connection reset")
		var calls []time.Duration
		start := time.Now()
		ctx, cancel := lock.KeepAlive(context.Background(), 300*time.Millisecond, func(context.Context) error {
			calls = append(calls, time.Since(start))
			if len(calls) == 3 {
				return failure
			}
			return nil
		})
		defer cancel()
		waitDone(t, ctx, 10*time.Second)
		want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
		if len(calls) != len(want) {
			t.Fatalf("refresh called at %v, want %v", calls, want)
		}
		for i := range want {
			if calls[i] != want[i] {
				t.Errorf("refresh called at %v, want %v", calls, want)
				break
			}
		}
		if cause := context.Cause(ctx); cause != failure {
			t.Errorf("cause = %v, want the refresh error", cause)
		}
	})
}

func TestKeepAlive_hungRefreshTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := lock.KeepAlive(context.Background(), 300*time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done() // a call that never answers
			return ctx.Err()
		})
		defer cancel()
		waitDone(t, ctx, 10*time.Second)
		// The first refresh starts at 100ms and is abandoned at 200ms,
		// while the lease still has a third of its TTL left.
		if took := time.Since(start); took != 200*time.Millisecond {
			t.Errorf("cancelled at %v, want 200ms", took)
		}
		cause := context.Cause(ctx)
		if !errors.Is(cause, context.DeadlineExceeded) || !strings.Contains(cause.Error(), "a third of the TTL") {
			t.Errorf("cause = %v, want a refresh timeout", cause)
		}
	})
}

func TestKeepAlive_cancelWaitsForTheWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var returned atomic.Bool
		_, cancel := lock.KeepAlive(context.Background(), 300*time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			time.Sleep(50 * time.Millisecond) // slow to notice
			returned.Store(true)
			return ctx.Err()
		})
		time.Sleep(150 * time.Millisecond) // a refresh is in flight
		cancel()
		if !returned.Load() {
			t.Error("cancel returned while the refresh was still running")
		}
	})
}

func TestKeepAlive_endsWithItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refreshes atomic.Int64
		parent, stop := context.WithCancel(context.Background())
		ctx, cancel := lock.KeepAlive(parent, 300*time.Millisecond, func(context.Context) error {
			refreshes.Add(1)
			return nil
		})
		defer cancel()
		time.Sleep(250 * time.Millisecond)
		stop()
		waitDone(t, ctx, 10*time.Second)
		time.Sleep(time.Second) // ten refresh periods: none may come now
		if n := refreshes.Load(); n != 2 {
			t.Errorf("%d refreshes, want 2 (at 100ms and 200ms, none after the parent ended)", n)
		}
	})
}

func TestKeepAlive_errorAfterCancelIsNotTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := lock.KeepAlive(context.Background(), 300*time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			return lock.ErrNotHeld // reported too late: the work had ended
		})
		time.Sleep(150 * time.Millisecond)
		cancel()
		if cause := context.Cause(ctx); cause != context.Canceled {
			t.Errorf("cause = %v, want context.Canceled from the caller's cancel", cause)
		}
	})
}

func TestKeepAlive_badTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second, 500 * time.Microsecond} {
		called := false
		ctx, cancel := lock.KeepAlive(context.Background(), ttl, func(context.Context) error {
			called = true
			return nil
		})
		cancel()
		if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrInvalid) {
			t.Errorf("ttl %v: cause = %v, want ErrInvalid", ttl, cause)
		}
		if called {
			t.Errorf("ttl %v: refresh was called", ttl)
		}
	}
}

func TestKeepAliveRetrying_ridesOutFailuresShorterThanTheTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var calls atomic.Int64
		// Every refresh from 100ms to 900ms fails: 800ms without one that
		// got through, less than the TTL.
		ctx, cancel := lock.KeepAliveRetrying(context.Background(), 3*time.Second, func(context.Context) error {
			calls.Add(1)
			if since := time.Since(start); since >= time.Second && since < 1900*time.Millisecond {
				return errors.New("test: i/o timeout")
			}
			return nil
		})
		defer cancel()
		time.Sleep(5 * time.Second)
		if err := ctx.Err(); err != nil {
			t.Fatalf("the context ended after failures shorter than the TTL: %v", context.Cause(ctx))
		}
		// Refreshes at 1s, 2s, 3s and 4s without the failures; the ones
		// from 1s to 1.9s are tried again every 200ms.
		if n := calls.Load(); n <= 4 {
			t.Errorf("%d refreshes, want the failed ones tried again", n)
		}
	})
}

func TestKeepAliveRetrying_givesUpAfterAWholeTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		failure := errors.New("test: i/o timeout")
		start := time.Now()
		ctx, cancel := lock.KeepAliveRetrying(context.Background(), 3*time.Second, func(context.Context) error {
			if time.Since(start) >= time.Second {
				return failure
			}
			return nil
		})
		defer cancel()
		waitDone(t, ctx, time.Minute)
		// The last refresh that got through went out at 0s (the start):
		// the lease may have expired from 3s on.
		if took := time.Since(start); took < 3*time.Second || took > 3*time.Second+lock.RetryEvery {
			t.Errorf("cancelled at %v, want within %v after the TTL (3s)", took, lock.RetryEvery)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, failure) {
			t.Errorf("cause = %v, want it to wrap the refresh error", cause)
		}
	})
}

func TestKeepAliveRetrying_notHeldEndsItAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		ctx, cancel := lock.KeepAliveRetrying(context.Background(), 3*time.Second, func(context.Context) error {
			return fmt.Errorf("test: %w", lock.ErrNotHeld)
		})
		defer cancel()
		waitDone(t, ctx, time.Minute)
		if took := time.Since(start); took != time.Second {
			t.Errorf("cancelled at %v, want 1s: the first refresh found the lease gone", took)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, lock.ErrNotHeld) {
			t.Errorf("cause = %v, want ErrNotHeld", cause)
		}
	})
}
