package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lock"
)

// Fifty goroutines ask for one lock at once; exactly one gets it, and the
// others give up when their context ends.
func TestAcquire_fiftyGoroutinesExactlyOneWins(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + "lock:wallet:42"
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	var won atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_, err := lock.Acquire(ctx, rdb, key, time.Minute)
			switch {
			case err == nil:
				won.Add(1)
			case !errors.Is(err, context.DeadlineExceeded):
				t.Errorf("a loser's error = %v, want one that wraps context.DeadlineExceeded", err)
			}
		})
	}
	wg.Wait()
	if n := won.Load(); n != 1 {
		t.Errorf("%d goroutines got the lock, want exactly 1", n)
	}
}

// noCalls is a Client that Redis never answers: it embeds a nil Client,
// so a call of any of its methods panics, one a learner adds to Client too.
type noCalls struct{ lock.Client }

// A TTL under a millisecond would be sent as no expiry at all, or tick a
// watchdog at no interval: every call that takes a TTL refuses it before
// any call to Redis, and Watch cancels its work with ErrBadTTL at once.
func TestTTLUnderAMillisecond_isRefusedBeforeAnyCall(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("the lock called Redis: %v", r)
		}
	}()
	ctx := t.Context()
	held := &lock.Lock{Key: "lock:wallet:42", Token: "ours"} // with no client: a call panics
	for _, ttl := range []time.Duration{0, -time.Second, 2 * time.Nanosecond, time.Millisecond - 1, redis.KeepTTL} {
		if _, err := lock.Acquire(ctx, noCalls{}, "lock:wallet:42", ttl); !errors.Is(err, lock.ErrBadTTL) {
			t.Errorf("Acquire with ttl %v: %v, want ErrBadTTL", ttl, err)
		}
		if _, err := lock.AcquireFenced(ctx, noCalls{}, "lock:{wallet:42}", "fence:{wallet:42}", ttl); !errors.Is(err, lock.ErrBadTTL) {
			t.Errorf("AcquireFenced with ttl %v: %v, want ErrBadTTL", ttl, err)
		}
		if err := held.Refresh(ctx, ttl); !errors.Is(err, lock.ErrBadTTL) {
			t.Errorf("Refresh with ttl %v: %v, want ErrBadTTL", ttl, err)
		}
		work, stop := held.Watch(ctx, ttl)
		if err := work.Err(); err == nil || !errors.Is(context.Cause(work), lock.ErrBadTTL) {
			t.Errorf("Watch with ttl %v: the work's context ended with %v (cause %v), want it cancelled with ErrBadTTL", ttl, err, context.Cause(work))
		}
		stop()
	}
}

// A holder whose lease expired and passed to another cannot delete the
// other's lock: its release says ErrNotHeld and leaves the key alone.
func TestRelease_leavesTheNextHoldersLockAlone(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + "lock:wallet:42"
	ctx := t.Context()
	a, err := lock.Acquire(ctx, rdb, key, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b, err := lock.Acquire(ctx, rdb, key, time.Minute) // waits for A's lease to expire
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("A's late release = %v, want ErrNotHeld", err)
	}
	if got := rdb.Get(ctx, key).Val(); got != b.Token {
		t.Fatalf("after A's release the key holds %q, want B's token", got)
	}
	if err := b.Release(ctx); err != nil {
		t.Errorf("B's release = %v", err)
	}
	if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("B's second release = %v, want ErrNotHeld", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the key is still there after B's release")
	}
}

// A wait for a lock someone else holds ends with its context.
func TestAcquire_waitsNoLongerThanItsContext(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + "lock:wallet:42"
	if _, err := lock.Acquire(t.Context(), rdb, key, time.Minute); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if l, err := lock.Acquire(ctx, rdb, key, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Acquire of a held lock = %v, %v; want the context's deadline", l, err)
	}
}

// Refresh extends its own lease, and neither another's nor one that has
// expired: a lost lease is never created again.
func TestRefresh_extendsOnlyItsOwnLease(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + "lock:wallet:42"
	ctx := t.Context()
	a, err := lock.Acquire(ctx, rdb, key, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Refresh(ctx, time.Minute); err != nil {
		t.Fatalf("Refresh of a held lock = %v", err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl <= time.Second {
		t.Errorf("PTTL after a refresh to 1m = %v", ttl)
	}
	rdb.Set(ctx, key, "another-holder", time.Second) // as if A had stalled and B taken over
	if err := a.Refresh(ctx, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh of another's lock = %v, want ErrNotHeld", err)
	}
	if ttl := rdb.PTTL(ctx, key).Val(); ttl > time.Second {
		t.Errorf("PTTL of the other's lock after A's refresh = %v, want it left at 1s or less", ttl)
	}
	rdb.Del(ctx, key) // expired
	if err := a.Refresh(ctx, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh of an expired lock = %v, want ErrNotHeld", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("Refresh created the expired lock again")
	}
}

// Work twice as long as the TTL keeps its lease under Watch.
func TestWatch_keepsASlowHoldersLease(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + "lock:wallet:42"
	ctx := t.Context()
	const ttl = time.Second
	l, err := lock.Acquire(ctx, rdb, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	work, stop := l.Watch(ctx, ttl)
	defer stop()
	select {
	case <-work.Done():
		t.Fatalf("the watchdog gave up: %v", context.Cause(work))
	case <-time.After(2 * ttl):
	}
	if got := rdb.Get(ctx, key).Val(); got != l.Token {
		t.Errorf("after 2 TTLs the key holds %q, want our token", got)
	}
}

// When a renewal finds the lease gone, Watch cancels the work at once,
// with the reason as the context's cause.
func TestWatch_cancelsTheWorkWhenTheLeaseIsLost(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + "lock:wallet:42"
	ctx := t.Context()
	const ttl = 300 * time.Millisecond
	l, err := lock.Acquire(ctx, rdb, key, ttl)
	if err != nil {
		t.Fatal(err)
	}
	work, stop := l.Watch(ctx, ttl)
	defer stop()
	rdb.Set(ctx, key, "another-holder", time.Minute)
	select {
	case <-work.Done():
	case <-time.After(time.Minute):
		t.Fatal("the work went on after the lease was taken")
	}
	if cause := context.Cause(work); !errors.Is(cause, lock.ErrNotHeld) {
		t.Errorf("cause = %v, want one that wraps ErrNotHeld", cause)
	}
}

// Every holder of a fenced lock carries a higher fence than the one
// before it, whoever it is.
func TestAcquireFenced_fencesIncreaseAcrossHolders(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	lockKey, fenceKey := prefix+"lock:{wallet:42}", prefix+"fence:{wallet:42}"
	var mu sync.Mutex
	var fences []int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			l, err := lock.AcquireFenced(t.Context(), rdb, lockKey, fenceKey, time.Minute)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock() // the order of holders is the order of this append
			fences = append(fences, l.Fence)
			mu.Unlock()
			if err := l.Release(t.Context()); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences in the order of holders: %v, want each above the last", fences)
		}
	}
}

// A fenced acquire that fails holds nothing: when the fence counter cannot
// count, or is the lock's own key, the error says so and the lock is free.
func TestAcquireFenced_aFailedCallHoldsNothing(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	lockKey, fenceKey := prefix+"lock:{wallet:42}", prefix+"fence:{wallet:42}"
	ctx := t.Context()
	for _, tt := range []struct {
		name     string
		fenceKey string
		counter  func() error // what the counter holds
		says     string
	}{
		{"a counter that holds no number", fenceKey, func() error { return rdb.Set(ctx, fenceKey, "not-a-number", 0).Err() }, fenceKey + " refused INCR"},
		{"a counter that is a hash", fenceKey, func() error { return rdb.HSet(ctx, fenceKey, "n", 1).Err() }, fenceKey + " refused INCR"},
		{"the lock's own key as the counter", lockKey, func() error { return nil }, "fenceKey is the lock's own key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rdb.Del(ctx, lockKey, fenceKey)
			if err := tt.counter(); err != nil {
				t.Fatal(err)
			}
			l, err := lock.AcquireFenced(ctx, rdb, lockKey, tt.fenceKey, time.Minute)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Errorf("AcquireFenced = %v, %v; want an error that says %q", l, err, tt.says)
			}
			if n := rdb.Exists(ctx, lockKey).Val(); n != 0 {
				t.Errorf("after the failed call the lock key exists, for %v more", rdb.PTTL(ctx, lockKey).Val())
			}
		})
	}
}
