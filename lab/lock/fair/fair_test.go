package fair_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/lock/fair"
)

func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	// One fair.Lock for the whole program: its waiters share one
	// subscription.
	f := fair.New(rdb)
	defer f.Close()

	// Wait at most 5 s for our turn; hold the lock for at most 2 s.
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := f.Acquire(actx, "app:lock:{wallet:42}", 2*time.Second)
	if err != nil {
		fmt.Println("no lock:", err)
		return
	}
	// Release hands the lock to the next waiter, if any.
	defer l.Release(ctx)

	fmt.Println("holding", l.Key)
}

// The fair lock's timings, as fair.go sets them: a Fair renews its
// presence on a lock every fallback, which also catches lost hand-offs,
// and a crashed Fair's presence runs out after lease.
// The tests wait for several of them before they call something late.
const (
	lease    = 300 * time.Millisecond
	fallback = lease / 3
	// slack is what a busy machine may add to any wait: generous, since
	// these tests catch a waiter left stranded, not a slow one.
	slack = 2 * time.Second
)

// newFair returns a Fair on rdb, closed when the test ends.
func newFair(t *testing.T, rdb fair.Client) *fair.Lock {
	t.Helper()
	f := fair.New(rdb)
	t.Cleanup(func() { f.Close() })
	return f
}

// queueKey is where the fair lock on key keeps its queue (see
// queue.lua).
func queueKey(key string) string { return tagOf(key) + ":queue" }

// queued returns how many waiters the queue of key holds.
func queued(t *testing.T, rdb redis.Cmdable, key string) int64 {
	t.Helper()
	n, err := rdb.LLen(labtest.Context(t, 5*time.Second), queueKey(key)).Result()
	if err != nil {
		t.Fatalf("LLEN %s: %v", queueKey(key), err)
	}
	return n
}

// waitQueued waits until key's queue holds n waiters.
func waitQueued(t *testing.T, rdb redis.Cmdable, key string, n int64) {
	t.Helper()
	deadline := time.Now().Add(slack)
	for queued(t, rdb, key) != n {
		if time.Now().After(deadline) {
			t.Fatalf("the queue holds %d waiters after %v, want %d", queued(t, rdb, key), slack, n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// result is what an Acquire running in its own goroutine returned, and
// when.
type result struct {
	l   *lock.Lock
	err error
	at  time.Time
}

// acquireAsync starts f.Acquire in a goroutine and returns where its
// result will arrive.
func acquireAsync(ctx context.Context, f *fair.Lock, key string, ttl time.Duration) <-chan result {
	c := make(chan result, 1)
	go func() {
		l, err := f.Acquire(ctx, key, ttl)
		c <- result{l, err, time.Now()}
	}()
	return c
}

// await returns the result, or ends the test when none comes within d.
func await(t *testing.T, c <-chan result, d time.Duration, what string) result {
	t.Helper()
	select {
	case r := <-c:
		return r
	case <-time.After(d):
		t.Fatalf("%s: no result within %v", what, d)
		return result{}
	}
}

func mustFairAcquire(t *testing.T, f *fair.Lock, key string, ttl time.Duration) *lock.Lock {
	t.Helper()
	l, err := f.Acquire(labtest.Context(t, 10*time.Second), key, ttl)
	if err != nil {
		t.Fatalf("Fair.Acquire(%s, %v): %v", key, ttl, err)
	}
	return l
}

// contend runs workers goroutines, spread over fairs, that each take the
// lock rounds times, hold it for hold and release it; even workers ask for
// a fence. It fails the test on two holders at once, a fence that does not
// grow, a failed Release, or a worker that is not done within limit.
func contend(t *testing.T, fairs []*fair.Lock, key string, workers, rounds int, hold, limit time.Duration) {
	t.Helper()
	ctx := labtest.Context(t, limit)
	var (
		inside, overlaps, done atomic.Int64
		lastFence              int64 // read and written only under the lock
		mu                     sync.Mutex
		errs                   []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	var wg sync.WaitGroup
	for w := range workers {
		f := fairs[w%len(fairs)]
		fenced := w%2 == 0
		wg.Go(func() {
			for range rounds {
				acquire := f.Acquire
				if fenced {
					acquire = f.AcquireFenced
				}
				l, err := acquire(ctx, key, 10*time.Second)
				if err != nil {
					fail(fmt.Errorf("worker %d: %w", w, err))
					return
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				switch {
				case fenced && l.Fence <= lastFence:
					fail(fmt.Errorf("worker %d: fence %d after fence %d", w, l.Fence, lastFence))
				case fenced:
					lastFence = l.Fence
				case l.Fence != 0:
					fail(fmt.Errorf("worker %d: Acquire gave fence %d, want 0", w, l.Fence))
				}
				time.Sleep(hold)
				inside.Add(-1)
				if err := l.Release(ctx); err != nil {
					fail(fmt.Errorf("worker %d: Release: %w", w, err))
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	for _, err := range errs[:min(len(errs), 5)] {
		t.Error(err)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d acquisitions found another holder inside, want 0", n)
	}
	if got, want := done.Load(), int64(workers*rounds); got != want {
		t.Errorf("%d acquisitions done, want %d", got, want)
	}
}

func TestFair_mutualExclusionOf50Goroutines(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	// Five Fairs stand for five processes, each with its own subscription.
	var fairs []*fair.Lock
	for range 5 {
		fairs = append(fairs, newFair(t, rdb))
	}
	contend(t, fairs, key, 50, 6, time.Millisecond, 60*time.Second)
	if n := queued(t, rdb, key); n != 0 {
		t.Errorf("the queue holds %d waiters after everyone is done, want 0", n)
	}
	if n := rdb.Exists(labtest.Context(t, 5*time.Second), key).Val(); n != 0 {
		t.Error("the lock is still held after everyone released it")
	}
}

func TestFair_servesWaitersInArrivalOrder(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	fairs := []*fair.Lock{newFair(t, rdb), newFair(t, rdb)}
	first := mustFairAcquire(t, fairs[0], key, 10*time.Second)

	const waiters = 8
	ctx := labtest.Context(t, 30*time.Second)
	var (
		mu    sync.Mutex
		order []int
		wg    sync.WaitGroup
	)
	for i := range waiters {
		wg.Go(func() {
			l, err := fairs[i%2].Acquire(ctx, key, 10*time.Second)
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := l.Release(ctx); err != nil {
				t.Errorf("waiter %d: Release: %v", i, err)
			}
		})
		// Arrive at distinct times: the next one starts once this one is
		// in the queue, and a little later still.
		waitQueued(t, rdb, key, int64(i+1))
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release of the first holder: %v", err)
	}
	wg.Wait()
	if want := []int{0, 1, 2, 3, 4, 5, 6, 7}; !slices.Equal(order, want) {
		t.Errorf("granted in the order %v, want %v (arrival order)", order, want)
	}
}

func TestFair_aWaiterWhoseContextEndsLeavesAndTheNextGetsTheLock(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	owner := mustFairAcquire(t, f, key, 10*time.Second)

	quitter, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := acquireAsync(quitter, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	next := acquireAsync(labtest.Context(t, 20*time.Second), f, key, 10*time.Second)
	waitQueued(t, rdb, key, 2)

	cancel()
	r := await(t, gone, slack, "the waiter whose context ended")
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context: %v, want context.Canceled", r.err)
	}
	// It left on its way out, not when its lease ran out.
	if n := queued(t, rdb, key); n != 1 {
		t.Errorf("the queue holds %d waiters once the first gave up, want 1", n)
	}

	if err := owner.Release(labtest.Context(t, 5*time.Second)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r = await(t, next, slack, "the next waiter")
	if r.err != nil {
		t.Fatalf("the next waiter: %v", r.err)
	}
	if got := holderID(t, rdb, key); got != r.l.ID() {
		t.Error("the lock does not hold the next waiter's token")
	}
	r.l.Release(labtest.Context(t, 5*time.Second))
}

func TestFair_aCrashedWaiterFallsOutAfterItsLease(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	owner := mustFairAcquire(t, f, key, 10*time.Second)
	ctx := labtest.Context(t, 20*time.Second)

	// What a process that crashed while it waited leaves behind: the
	// first place in the queue, asking for a 60 s lease, and the presence
	// of its Fair, which nobody will renew (see queue.lua).
	dead := "CRASHEDWAITER 60000 0 CRASHEDFAIR"
	if err := rdb.RPush(ctx, queueKey(key), dead).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, queueKey(key)+":CRASHEDFAIR", "1", lease).Err(); err != nil {
		t.Fatal(err)
	}
	next := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 2)

	time.Sleep(lease + fallback) // the crashed Fair's presence runs out
	if err := owner.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r := await(t, next, slack, "the waiter behind the crashed one")
	if r.err != nil {
		t.Fatalf("the waiter behind the crashed one: %v", r.err)
	}
	if got := holderID(t, rdb, key); got != r.l.ID() {
		t.Errorf("the lock holds %q, want the live waiter's token", got)
	}
	if n := queued(t, rdb, key); n != 0 {
		t.Errorf("the queue holds %d entries, want 0: the crashed waiter's is still there", n)
	}
	r.l.Release(ctx)
}

func TestFair_aHolderThatDiesIsSucceededWithinItsTTL(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	const ttl = 600 * time.Millisecond
	dead := mustFairAcquire(t, f, key, ttl) // and never released
	start := time.Now()

	ctx := labtest.Context(t, 20*time.Second)
	first := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	second := acquireAsync(ctx, f, key, 10*time.Second)

	r := await(t, first, ttl+fallback+slack, "the first waiter")
	if r.err != nil {
		t.Fatalf("the first waiter: %v", r.err)
	}
	if took := r.at.Sub(start); took > ttl+fallback+slack {
		t.Errorf("the first waiter got the lock %v after the holder died, want within its TTL (%v) plus one fallback (%v)", took, ttl, fallback)
	}
	if err := dead.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release by the dead holder: %v, want ErrNotHeld", err)
	}
	// The waiter that came second is handed the lock on release.
	if err := r.l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	r = await(t, second, slack, "the second waiter")
	if r.err != nil {
		t.Fatalf("the second waiter: %v", r.err)
	}
	r.l.Release(ctx)
}

// A lock from a Fair is an ordinary *Lock: Refresh and Watch keep it,
// Release hands it on whatever method it is given, and a second Release
// finds nothing to give.
func TestFair_itsLockRefreshesAndReleasesLikeAnyLock(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	ctx := labtest.Context(t, 20*time.Second)
	l, err := f.AcquireFenced(ctx, key, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence < 1 || l.Attempts != 1 || l.Key != key {
		t.Errorf("got %v with %d attempts, want a fence and 1 attempt", l, l.Attempts)
	}
	if err := l.Refresh(ctx, 300*time.Millisecond); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	work, stop := l.Watch(ctx, 300*time.Millisecond)
	time.Sleep(600 * time.Millisecond) // two refreshes
	if work.Err() != nil {
		t.Errorf("Watch lost the lease: %v", context.Cause(work))
	}
	stop()

	next := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	if err := l.ReleaseLua(ctx); err != nil {
		t.Fatalf("ReleaseLua: %v", err)
	}
	r := await(t, next, slack, "the waiter")
	if r.err != nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second Release: %v, want ErrNotHeld", err)
	}
	if err := l.Refresh(ctx, 300*time.Millisecond); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh after Release: %v, want ErrNotHeld", err)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Errorf("Release by the waiter: %v", err)
	}
}

// A waiter's TTL, like Acquire's, is rounded up to whole milliseconds,
// and the hand-off gives it exactly that.
func TestFair_aFractionOfAMillisecondIsRoundedUp(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	ctx := labtest.Context(t, 20*time.Second)
	owner := mustFairAcquire(t, f, key, 10*time.Second)
	const ttl = 1500*time.Millisecond + 400*time.Microsecond
	next := acquireAsync(ctx, f, key, ttl)
	waitQueued(t, rdb, key, 1)
	entries := rdb.LRange(ctx, queueKey(key), 0, -1).Val()
	if len(entries) != 1 || !strings.Contains(entries[0], " 1501 0 ") {
		t.Errorf("queue entry %q, want one asking for 1501 ms and no fence", entries)
	}
	owner.Release(ctx)
	r := await(t, next, slack, "the waiter")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl <= 1000*time.Millisecond || pttl > 1501*time.Millisecond {
		t.Errorf("PTTL after the hand-off = %v, want at most 1501ms and well above 1s", pttl)
	}
	r.l.Release(ctx)
}

func TestFair_badInputNeverReachesRedis(t *testing.T) {
	var nilFair *fair.Lock
	var nilClient *redis.Client
	ctx := labtest.Context(t, 5*time.Second)
	f := newFair(t, &faultyFairClient{})
	tests := []struct {
		name string
		f    *fair.Lock
		key  string
		ttl  time.Duration
		want string // the start of the error, which matches lock.ErrInvalid
	}{
		{"nil Lock", nilFair, "k", time.Second, "lock: nil client"},
		{"nil client", newFair(t, nil), "k", time.Second, "lock: nil client"},
		{"nil *redis.Client", newFair(t, nilClient), "k", time.Second, "lock: nil client"},
		{"empty key", f, "", time.Second, "lock: empty key"},
		{"zero TTL", f, "k", 0, "lock: TTL must be at least 1ms, got 0s"},
		{"TTL under 1ms", f, "k", 999 * time.Microsecond, "lock: TTL must be at least 1ms, got 999µs"},
		// Its queue could not share its Redis Cluster slot.
		{"a stray brace", f, "probe:lock}7", time.Second, `lock: key has a "}" but no hash tag: "probe:lock}7": `},
		{"a stray brace", f, "a{}b", time.Second, `lock: key has a "}" but no hash tag: "a{}b": `},
		{"a stray brace", f, "}{", time.Second, `lock: key has a "}" but no hash tag: "}{": `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, acquire := range []func(context.Context, string, time.Duration) (*lock.Lock, error){tt.f.Acquire, tt.f.AcquireFenced} {
				if _, err := acquire(ctx, tt.key, tt.ttl); !errors.Is(err, lock.ErrInvalid) || !strings.HasPrefix(err.Error(), tt.want) {
					t.Errorf("got %v, want lock.ErrInvalid, %q", err, tt.want)
				}
			}
		})
	}
}

func TestFair_unreachableRedisFailsAtOnce(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: the first try fails at once, and Acquire
	// must say so instead of waiting for its context to end.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	f := newFair(t, rdb)
	ctx := labtest.Context(t, time.Minute)
	if _, err := f.Acquire(ctx, "test:unreachable:lock", time.Second); err == nil {
		t.Fatal("Acquire against a closed port succeeded")
	} else if ctx.Err() != nil {
		t.Fatalf("Acquire waited for its context to end: %v", err)
	} else if !strings.HasPrefix(err.Error(), "lock: acquire test:unreachable:lock: ") {
		t.Errorf("error %q does not name the key", err)
	}
}

// faultyFairClient panics at any call; its Fair must never make one.
type faultyFairClient struct{ fair.Client }

func TestFair_keyOfAnotherTypeFailsAtOnce(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	ctx := labtest.Context(t, 10*time.Second)
	if err := rdb.HSet(ctx, key, "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	for _, acquire := range []func(context.Context, string, time.Duration) (*lock.Lock, error){f.Acquire, f.AcquireFenced} {
		if _, err := acquire(ctx, key, time.Second); !errors.Is(err, lock.ErrWrongType) {
			t.Errorf("got %v, want ErrWrongType", err)
		}
	}
	rdb.Del(ctx, key)
	if err := rdb.HSet(ctx, lock.FenceKey(key), "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.AcquireFenced(ctx, key, time.Second); !errors.Is(err, lock.ErrWrongType) {
		t.Errorf("AcquireFenced with a broken counter: %v, want ErrWrongType", err)
	}
	if n := queued(t, rdb, key); n != 0 {
		t.Errorf("the queue holds %d waiters after refusals, want 0", n)
	}
}

// A waiter that wants a fence, and whose turn comes when the counter is
// broken, is skipped and told so: it returns the refusal, and the next
// waiter gets the lock.
func TestFair_aFencedWaiterSkippedForABrokenCounterSaysWhy(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	ctx := labtest.Context(t, 20*time.Second)
	owner := mustFairAcquire(t, f, key, 10*time.Second)
	fenced := make(chan result, 1)
	go func() {
		l, err := f.AcquireFenced(ctx, key, 10*time.Second)
		fenced <- result{l, err, time.Now()}
	}()
	waitQueued(t, rdb, key, 1)
	next := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 2)

	if err := rdb.HSet(ctx, lock.FenceKey(key), "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdb.Del(context.Background(), lock.FenceKey(key)) })
	if err := owner.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if r := await(t, fenced, slack, "the fenced waiter"); !errors.Is(r.err, lock.ErrWrongType) {
		t.Errorf("the fenced waiter: %v, want ErrWrongType", r.err)
	}
	r := await(t, next, slack, "the waiter behind it")
	if r.err != nil {
		t.Fatalf("the waiter behind it: %v", r.err)
	}
	r.l.Release(ctx)
}

// A lock key that turns into another type while waiters queue fails all
// of them, not one per renewal.
func TestFair_aKeyThatTurnsIntoAnotherTypeFailsEveryWaiter(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	ctx := labtest.Context(t, 20*time.Second)
	owner := mustFairAcquire(t, f, key, 10*time.Second)
	var waiters []<-chan result
	for i := range 4 {
		waiters = append(waiters, acquireAsync(ctx, f, key, 10*time.Second))
		waitQueued(t, rdb, key, int64(i+1))
	}
	// The holder's lease is gone, and the key holds a hash now.
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, key, "a", "b").Err(); err != nil {
		t.Fatal(err)
	}
	for i, w := range waiters {
		if r := await(t, w, slack, fmt.Sprintf("waiter %d", i)); !errors.Is(r.err, lock.ErrWrongType) {
			t.Errorf("waiter %d: %v, want ErrWrongType", i, r.err)
		}
	}
	if n := queued(t, rdb, key); n != 0 {
		t.Errorf("the queue holds %d waiters after the refusals, want 0", n)
	}
	if err := owner.Release(ctx); err == nil {
		t.Error("Release of a lease whose key became a hash succeeded")
	}
}

// Not parallel: it counts the process's goroutines.
func TestFair_closeLeavesNoGoroutineBehind(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 20*time.Second)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()

	f := fair.New(rdb)
	l, err := f.Acquire(ctx, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	handed := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	stranded := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 2)
	l.Release(ctx)
	r := await(t, handed, slack, "the waiter handed the lock")
	if r.err != nil {
		t.Fatal(r.err)
	}

	f.Close()
	r2 := await(t, stranded, slack, "the waiter still waiting at Close")
	if !errors.Is(r2.err, fair.ErrClosed) {
		t.Errorf("Acquire waiting at Close: %v, want ErrClosed", r2.err)
	}
	if n := queued(t, rdb, key); n != 0 {
		t.Errorf("the queue holds %d waiters after Close, want 0", n)
	}
	if _, err := f.Acquire(ctx, key, time.Second); !errors.Is(err, fair.ErrClosed) {
		t.Errorf("Acquire after Close: %v, want ErrClosed", err)
	}
	if err := r.l.Release(ctx); err != nil {
		t.Errorf("Release after Close of a lock it handed out: %v", err)
	}
	f.Close() // a second Close does nothing

	deadline := time.Now().Add(slack)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after Close, %d before:\n%s", after, before, buf[:runtime.Stack(buf, true)])
	}
}

func TestFair_killedConnectionsDoNotStrandWaiters(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	rdb := srv.Client(t)
	key := "lock:{wallet:1}"
	fairs := []*fair.Lock{newFair(t, srv.Client(t)), newFair(t, srv.Client(t))}

	// One hand-off made while the waiter's reader is cut off: its
	// connection is killed just before the release.
	holder := mustFairAcquire(t, fairs[0], key, 10*time.Second)
	ctx := labtest.Context(t, 30*time.Second)
	next := acquireAsync(ctx, fairs[1], key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	time.Sleep(50 * time.Millisecond) // its reader reads
	if killReaders(ctx, rdb) == 0 {
		t.Fatal("no connection was reading hand-offs")
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := await(t, next, fallback+slack, "the waiter whose connections were killed")
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release(ctx)

	// Then kill every reader's connection every 30 ms while 10 workers
	// contend. (Killing the others is TestFair_lostRepliesAreNeverReportedAsNotHeld.)
	stop := labtest.Disrupt(30*time.Millisecond, func() {
		killReaders(context.Background(), rdb)
	})
	contend(t, fairs, key, 10, 10, time.Millisecond, 30*time.Second)
	t.Logf("connections killed %d times", stop())
}

// killReaders kills every connection that is reading hand-offs, and
// says how many it killed.
func killReaders(ctx context.Context, rdb *redis.Client) int {
	list, _ := rdb.ClientList(ctx).Result()
	n := 0
	for _, line := range strings.Split(list, "\n") {
		if id, ok := strings.CutPrefix(line, "id="); ok && strings.Contains(line, " cmd=xread ") {
			id, _, _ = strings.Cut(id, " ")
			if rdb.Do(ctx, "CLIENT", "KILL", "ID", id).Err() == nil {
				n++
			}
		}
	}
	return n
}

func TestFair_scriptFlushMidRun(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	rdb := srv.Client(t)
	fairs := []*fair.Lock{newFair(t, srv.Client(t)), newFair(t, srv.Client(t))}
	stop := labtest.Disrupt(10*time.Millisecond, func() { rdb.ScriptFlush(context.Background()) })
	contend(t, fairs, "lock:{wallet:1}", 10, 10, time.Millisecond, 30*time.Second)
	t.Logf("SCRIPT FLUSH %d times", stop())
}

func TestFair_redisRestartMidWait(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	rdb := srv.Client(t)
	key := "lock:{wallet:1}"
	f := newFair(t, srv.Client(t))
	ctx := labtest.Context(t, 30*time.Second)

	lost := mustFairAcquire(t, f, key, 20*time.Second)
	waiter := acquireAsync(ctx, f, key, 20*time.Second)
	waitQueued(t, rdb, key, 1)
	srv.Restart(t) // empty: the lease and the queue are gone
	r := await(t, waiter, 10*time.Second, "the waiter across the restart")
	if r.err != nil {
		t.Fatalf("the waiter across the restart: %v", r.err)
	}
	if err := lost.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release of a lease the restart lost: %v, want ErrNotHeld", err)
	}

	// After the restart, hand-offs work again.
	next := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	if err := r.l.Release(ctx); err != nil {
		t.Fatalf("Release after the restart: %v", err)
	}
	r = await(t, next, slack, "a waiter after the restart")
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release(ctx)
}

// When Redis loses the queue with waiters in it, every waiter is served
// once Redis answers again, though the holder, whose release finds its
// lease gone (or hands off to nobody), takes the lock again at once, on
// an empty queue, and goes on taking it: each Lock's reader sees at its
// next tick that the queue lost its waiters, and they queue again. The
// set-up is two processes (fair.Locks) of eight goroutines, holds of 2 ms,
// TTL 2 s, and 10 s for each waiter.
func TestFair_everyWaiterIsServedAfterRedisLosesTheQueue(t *testing.T) {
	t.Parallel()
	key := "lock:{wallet:1}"
	for _, c := range []struct {
		fault string
		hit   func(t *testing.T, srv *labtest.RedisServer, admin *redis.Client)
	}{
		{"FLUSHDB", func(t *testing.T, _ *labtest.RedisServer, admin *redis.Client) {
			if err := admin.FlushDB(t.Context()).Err(); err != nil {
				t.Fatalf("FLUSHDB: %v", err)
			}
		}},
		{"DEL of the queue", func(t *testing.T, _ *labtest.RedisServer, admin *redis.Client) {
			if err := admin.Del(t.Context(), queueKey(key)).Err(); err != nil {
				t.Fatalf("DEL: %v", err)
			}
		}},
		{"kill -9 and an empty restart", func(t *testing.T, srv *labtest.RedisServer, _ *redis.Client) {
			srv.Restart(t)
		}},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			srv := labtest.StartRedis(t)
			admin := srv.Client(t)
			fairs := []*fair.Lock{newFair(t, srv.Client(t)), newFair(t, srv.Client(t))}
			ctx := labtest.Context(t, 30*time.Second)
			var inside, overlaps atomic.Int64
			hold := func(l *lock.Lock) error {
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				inside.Add(-1)
				return l.Release(ctx)
			}

			holder := mustFairAcquire(t, fairs[0], key, 2*time.Second)
			const waiters = 15 // 7 beside the holder, 8 in the other process
			type served struct {
				at  time.Time
				err error
			}
			results := make(chan served, waiters)
			for i := range waiters {
				go func() {
					wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
					defer cancel()
					l, err := fairs[(i+1)%2].Acquire(wctx, key, 2*time.Second)
					at := time.Now()
					if err == nil {
						err = hold(l)
					}
					results <- served{at, err}
				}()
				waitQueued(t, admin, key, int64(i+1))
			}

			c.hit(t, srv, admin)
			back := time.Now()
			// The holder's release, then its own loop, as its goroutine's
			// next rounds would run: it takes the lock again at once.
			err := holder.Release(ctx)
			t.Logf("the holder's release after the fault: %v", err)
			done := make(chan struct{})
			var rounds atomic.Int64
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					select {
					case <-done:
						return
					default:
					}
					if l, err := fairs[0].Acquire(ctx, key, 2*time.Second); err == nil {
						hold(l)
						rounds.Add(1)
					}
				}
			})
			var failed int
			var last time.Duration
			for range waiters {
				r := <-results
				if r.err != nil {
					failed++
					t.Errorf("a waiter queued at the fault: %v, want served", r.err)
				} else {
					last = max(last, r.at.Sub(back))
				}
			}
			close(done)
			wg.Wait()
			t.Logf("%d of %d waiters served, the last %v after the fault; meanwhile the holder's goroutine took the lock %d times",
				waiters-failed, waiters, last.Round(time.Millisecond), rounds.Load())
			if n := overlaps.Load(); n != 0 {
				t.Errorf("%d acquisitions found another holder inside, want 0", n)
			}
		})
	}
}

// After an outage (Redis killed, then started again empty on the same
// port), every waiter that was queued when Redis went is served once
// Redis is back, or fails with an error of its own (a try in flight when
// Redis went), while the other workers go on contending: none waits on
// until the contention stops. How long they took is logged, not asserted.
func TestFair_everyWaiterIsServedSoonAfterAnOutage(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	key := "lock:{wallet:1}"
	var fairs []*fair.Lock
	for range 3 {
		fairs = append(fairs, newFair(t, srv.Client(t)))
	}
	const (
		workers = 30
		down    = 2 * time.Second
		// stranded is how long after Redis is back a waiter queued at the
		// outage may still wait before the test calls it stranded: far
		// beyond any turn (30 workers holding 2 ms each).
		stranded = 30 * time.Second
	)
	var (
		inside, overlaps, acquired, counter atomic.Int64
		mu                                  sync.Mutex
		waiting                             = map[int]time.Time{} // worker: since when its Acquire runs
		atOutage                            map[int]time.Time     // the Acquires running when Redis went
		answered                            = map[int]error{}     // how each of those ended
		servedAt                            = map[int]time.Time{}
	)
	allAnswered := make(chan struct{})
	ctx, stop := context.WithCancel(labtest.Context(t, 60*time.Second))
	defer stop()
	var wg sync.WaitGroup
	for w := range workers {
		f := fairs[w%len(fairs)]
		wg.Go(func() {
			for ctx.Err() == nil {
				start := time.Now()
				mu.Lock()
				waiting[w] = start
				mu.Unlock()
				l, err := f.Acquire(ctx, key, 2*time.Second)
				mu.Lock()
				delete(waiting, w)
				if since, ok := atOutage[w]; ok && since.Equal(start) {
					answered[w] = err
					servedAt[w] = time.Now()
					if len(answered) == len(atOutage) {
						close(allAnswered)
					}
				}
				mu.Unlock()
				if err != nil {
					// Redis is down: the first try of an Acquire fails at once.
					time.Sleep(10 * time.Millisecond)
					continue
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				n := counter.Load()
				time.Sleep(2 * time.Millisecond)
				counter.Store(n + 1)
				inside.Add(-1)
				acquired.Add(1)
				l.Release(ctx) // fails while Redis is down, or after it lost the lease
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	mu.Lock()
	atOutage = maps.Clone(waiting)
	if len(atOutage) == 0 {
		close(allAnswered)
	}
	mu.Unlock()
	srv.Kill()
	time.Sleep(down)
	srv.Start(t)
	back, atBack := time.Now(), acquired.Load()
	select {
	case <-allAnswered:
	case <-time.After(stranded):
	}
	meanwhile := acquired.Load() - atBack
	stop()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	var served, failed int
	var last time.Duration
	for w := range atOutage {
		err, ok := answered[w]
		switch {
		case !ok || errors.Is(err, context.Canceled):
			t.Errorf("worker %d, queued at the outage, still waited %v after Redis was back, while the others took the lock %d times",
				w, stranded, meanwhile)
		case err != nil:
			failed++
			t.Logf("worker %d, queued at the outage: %v", w, err)
		default:
			served++
			last = max(last, servedAt[w].Sub(back))
		}
	}
	t.Logf("%d acquisitions; of %d Acquire calls running at the outage, %d were served, the last %v after Redis was back, and %d failed at once",
		acquired.Load(), len(atOutage), served, last.Round(time.Millisecond), failed)
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d acquisitions found another holder inside, want 0", n)
	}
	if got, want := counter.Load(), acquired.Load(); got != want {
		t.Errorf("the counter is %d after %d acquisitions: updates were lost", got, want)
	}
}

// With the clients' connections killed every 20 ms, replies are lost
// mid-flight: a script is sent once, so a retry cannot queue a waiter
// twice, and a release that gets no answer says the outcome is unknown,
// never that the lock was not held (no lease runs out here: the TTL is
// far longer than any hold).
func TestFair_lostRepliesAreNeverReportedAsNotHeld(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	killer := srv.Client(t)
	key := "lock:{wallet:1}"
	var fairs []*fair.Lock
	for range 3 {
		fairs = append(fairs, newFair(t, srv.Client(t)))
	}
	const workers, rounds = 15, 60
	var (
		inside, overlaps, acquired, counter atomic.Int64
		notHeld, unknown, otherRelease      atomic.Int64
		failedAcquires                      atomic.Int64
	)
	ctx := labtest.Context(t, 90*time.Second)
	stop := labtest.Disrupt(20*time.Millisecond, func() {
		killer.ClientKillByFilter(context.Background(), "TYPE", "normal")
	})
	var wg sync.WaitGroup
	for w := range workers {
		f := fairs[w%len(fairs)]
		wg.Go(func() {
			for done := 0; done < rounds && ctx.Err() == nil; {
				l, err := f.Acquire(ctx, key, 10*time.Second)
				if err != nil {
					failedAcquires.Add(1) // three tries in a row got no answer
					continue
				}
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				n := counter.Load()
				time.Sleep(time.Millisecond)
				counter.Store(n + 1)
				inside.Add(-1)
				acquired.Add(1)
				done++
				switch err := l.Release(ctx); {
				case errors.Is(err, lock.ErrNotHeld):
					notHeld.Add(1)
					t.Errorf("worker %d: Release: %v, want nil or ErrUnknown: the lease cannot have run out", w, err)
				case errors.Is(err, lock.ErrUnknown):
					unknown.Add(1)
				case err != nil:
					otherRelease.Add(1)
					t.Errorf("worker %d: Release: %v", w, err)
				}
			}
		})
	}
	wg.Wait()
	kills := stop()
	t.Logf("%d acquisitions under %d kills; releases: %d unknown, %d not held, %d other errors; %d Acquire calls gave up",
		acquired.Load(), kills, unknown.Load(), notHeld.Load(), otherRelease.Load(), failedAcquires.Load())
	if got, want := acquired.Load(), int64(workers*rounds); got != want {
		t.Errorf("%d acquisitions, want %d", got, want)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d acquisitions found another holder inside, want 0", n)
	}
	if got, want := counter.Load(), acquired.Load(); got != want {
		t.Errorf("the counter is %d after %d acquisitions: updates were lost", got, want)
	}
}

// scriptsFail is a fair.Client whose scripts all fail while fail is set,
// as if every reply were lost, however they are sent.
type scriptsFail struct {
	redis.UniversalClient
	fail *atomic.Bool
}

var errNoReply = errors.New("injected: no reply")

func (c scriptsFail) Process(ctx context.Context, cmd redis.Cmder) error {
	if name := cmd.Name(); c.fail.Load() && (name == "evalsha" || name == "eval") {
		cmd.SetErr(errNoReply)
		return errNoReply
	}
	return c.UniversalClient.Process(ctx, cmd)
}

func (c scriptsFail) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if c.fail.Load() {
		return redis.NewCmdResult(nil, errNoReply)
	}
	return c.UniversalClient.EvalSha(ctx, sha, keys, args...)
}

// Every key the fair lock writes expires, even when its waiters cannot
// leave the queue: their entries go with the queue soon after nobody
// waits on it any more. PTTL tells a key with no expiry (-1) from one
// already gone (-2), which is what the lesson wants; how long the keys
// lasted is logged.
func TestFair_everyKeyItWritesExpires(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	prefix := strings.TrimSuffix(key, "lock:{wallet:1}")
	ctx := labtest.Context(t, 30*time.Second)
	holder := mustFairAcquire(t, newFair(t, rdb), key, 10*time.Second)

	var fail atomic.Bool
	leaving := []*fair.Lock{fair.New(scriptsFail{rdb, &fail}), fair.New(scriptsFail{rdb, &fail})}
	var waiters []<-chan result
	for i := range 29 {
		waiters = append(waiters, acquireAsync(ctx, leaving[i%2], key, 10*time.Second))
		waitQueued(t, rdb, key, int64(i+1))
	}
	fail.Store(true)
	for _, f := range leaving {
		f.Close() // each waiter's leave fails, for a second
	}
	// Nothing renews the queue now: on a busy machine it may have expired
	// already, which is the lesson too. Fewer than 29 and more than none
	// would mean a leave got through.
	switch n := queued(t, rdb, key); n {
	case 29:
	case 0:
		t.Log("the queue expired before it was read")
	default:
		t.Fatalf("the queue holds %d entries as the leaves fail, want 29 (or none, expired)", n)
	}
	expiring := func() []string {
		t.Helper()
		keys, err := rdb.Keys(ctx, prefix+"*").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			switch ttl, err := rdb.PTTL(ctx, k).Result(); {
			case err != nil:
				t.Fatalf("PTTL %s: %v", k, err)
			case ttl == -1:
				t.Errorf("%s has no expiry (PTTL -1)", k)
			case ttl == -2: // gone since KEYS: it expired
			}
		}
		return keys
	}
	t.Logf("with every leave failing, %d keys, each expiring", len(expiring()))
	for i, w := range waiters {
		if r := await(t, w, slack, fmt.Sprintf("waiter %d", i)); !errors.Is(r.err, fair.ErrClosed) {
			t.Fatalf("waiter %d: %v, want ErrClosed", i, r.err)
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	for keys := expiring(); len(keys) > 0; keys = expiring() {
		if t.Failed() { // a key without expiry: no use waiting for it
			t.FailNow()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("left behind %v after every waiter is gone: %v", time.Since(released).Round(time.Millisecond), keys)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Logf("every key was gone %v after the release", time.Since(released).Round(time.Millisecond))
}

// A Fair holds no connection for a lock nobody waits on: its reader on a
// key stops a second after the last waiter there left.
func TestFair_anIdleReaderStops(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t)
	rdb := srv.Client(t)
	key := "lock:{wallet:1}"
	f := newFair(t, srv.Client(t))
	ctx := labtest.Context(t, 30*time.Second)

	readers := func() int {
		list, err := rdb.ClientList(ctx).Result()
		if err != nil {
			t.Fatalf("CLIENT LIST: %v", err)
		}
		return strings.Count(list, " flags=b ") // blocked, in XREAD
	}
	waitReaders := func(want int) {
		t.Helper()
		deadline := time.Now().Add(time.Second + slack) // the reader lingers a second

		for readers() != want {
			if time.Now().After(deadline) {
				t.Fatalf("%d connections reading hand-offs, want %d", readers(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for round := range 2 { // and the next waiter reads again
		owner := mustFairAcquire(t, f, key, 10*time.Second)
		next := acquireAsync(ctx, f, key, 10*time.Second)
		waitQueued(t, rdb, key, 1)
		waitReaders(1)
		owner.Release(ctx)
		r := await(t, next, slack, fmt.Sprintf("the waiter of round %d", round))
		if r.err != nil {
			t.Fatal(r.err)
		}
		r.l.Release(ctx)
		waitReaders(0)
	}
}

// deafClient reads hand-offs on another server, where none is ever
// written: every hand-off its Fair waits for goes unread.
type deafClient struct {
	redis.UniversalClient
	elsewhere *redis.Client
}

func (d deafClient) XRead(ctx context.Context, a *redis.XReadArgs) *redis.XStreamSliceCmd {
	return d.elsewhere.XRead(ctx, a)
}

// With every hand-off unread, waiters are still served, in order: a
// release makes the next waiter the holder, and the next tick finds out.
func TestFair_everyMessageLostStillServesWaitersInOrder(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	deaf := newFair(t, deafClient{rdb, labtest.StartRedis(t).Client(t)})
	first := mustFairAcquire(t, deaf, key, 10*time.Second)

	ctx := labtest.Context(t, 30*time.Second)
	var waiters []<-chan result
	for i := range 4 {
		waiters = append(waiters, acquireAsync(ctx, deaf, key, 10*time.Second))
		waitQueued(t, rdb, key, int64(i+1))
	}
	l := first
	for i, w := range waiters {
		if err := l.Release(ctx); err != nil {
			t.Fatalf("Release before waiter %d: %v", i, err)
		}
		r := await(t, w, fallback+slack, fmt.Sprintf("waiter %d", i))
		if r.err != nil {
			t.Fatalf("waiter %d: %v", i, r.err)
		}
		l = r.l
	}
	l.Release(ctx)
}

// A waiter that gives up just after a release handed it the lock, before
// it heard so, passes the lock on to the next.
func TestFair_aWaiterThatGivesUpWhenHandedTheLockPassesItOn(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	f := newFair(t, rdb)
	deaf := newFair(t, deafClient{rdb, labtest.StartRedis(t).Client(t)})
	holder := mustFairAcquire(t, f, key, 10*time.Second)

	quitter, cancel := context.WithCancel(context.Background())
	defer cancel()
	gone := acquireAsync(quitter, deaf, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	ctx := labtest.Context(t, 20*time.Second)
	next := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 2)

	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cancel() // the deaf waiter holds the lock now, and does not know it yet
	r := await(t, gone, slack, "the waiter that gave up")
	if r.err == nil {
		// Its next try came first after all (a rare race): then it holds
		// the lock and gives it back itself.
		t.Log("the waiter found out it held the lock before it saw its context end")
		r.l.Release(ctx)
	} else if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("the waiter that gave up: %v, want context.Canceled", r.err)
	}
	r = await(t, next, slack, "the next waiter")
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.l.Release(ctx)
}

// On Redis Cluster every key of a fair lock must share the lock key's slot,
// and the hand-off goes by sharded pub/sub. A one-node cluster checks both:
// Redis refuses a script whose keys span slots even there.
func TestFair_worksOnRedisCluster(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	node := srv.Client(t)
	ctx := labtest.Context(t, 30*time.Second)
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		info, _ := node.ClusterInfo(ctx).Result()
		if strings.Contains(info, "cluster_state:ok") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster is not ok after 10s:\n%s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { cluster.Close() })
	fairs := []*fair.Lock{newFair(t, cluster), newFair(t, cluster)}

	for _, key := range []string{"lock:7", "app:lock:{wallet:42}"} {
		owner, err := fairs[0].AcquireFenced(ctx, key, 10*time.Second)
		if err != nil {
			t.Fatalf("AcquireFenced(%s): %v", key, err)
		}
		next := make(chan result, 1)
		go func() {
			l, err := fairs[1].AcquireFenced(ctx, key, 10*time.Second)
			next <- result{l, err, time.Now()}
		}()
		waitQueued(t, cluster, key, 1)
		// The hand-offs go to a stream in the lock key's slot.
		stream := tagOf(key) + ":handoff"
		if slot, want := node.ClusterKeySlot(ctx, stream).Val(), node.ClusterKeySlot(ctx, key).Val(); slot != want {
			t.Errorf("the hand-off stream %s is in slot %d, the lock in %d", stream, slot, want)
		}
		if err := owner.Release(ctx); err != nil {
			t.Fatalf("Release(%s): %v", key, err)
		}
		r := await(t, next, slack, "the waiter on "+key)
		if r.err != nil {
			t.Fatalf("the waiter on %s: %v", key, r.err)
		}
		if r.l.Fence != owner.Fence+1 {
			t.Errorf("fence %d after %d, want the next one", r.l.Fence, owner.Fence)
		}
		// The release told the waiter on the stream, naming it by the SHA-1
		// of its token (never the token), with its fence.
		last, err := cluster.XRevRangeN(ctx, stream, "+", "-", 1).Result()
		if err != nil || len(last) != 1 || !strings.HasPrefix(fmt.Sprint(last[0].Values["h"]), fmt.Sprintf("%s %d ", r.l.ID(), r.l.Fence)) {
			t.Errorf("the hand-off entry: got %v, %v; want the SHA-1 of the waiter's token and its fence", last, err)
		}
		r.l.Release(ctx)
	}
	contend(t, fairs, "lock:{wallet:1}", 10, 5, time.Millisecond, 30*time.Second)
}

// tagOf returns the part every key of the fair lock on key starts with:
// the key itself when it has a hash tag, the key as one otherwise.
func tagOf(key string) string { return strings.TrimSuffix(lock.FenceKey(key), ":fence") }

// A Ring sends each lock's scripts and reads to the shard of its hash
// tag: the hand-off stream is on the lock's shard.
func TestFair_worksOnARing(t *testing.T) {
	t.Parallel()
	servers := []*labtest.RedisServer{labtest.StartRedis(t), labtest.StartRedis(t)}
	ring := redis.NewRing(&redis.RingOptions{
		Addrs:                 map[string]string{"a": servers[0].Addr, "b": servers[1].Addr},
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { ring.Close() })
	f := newFair(t, ring)
	ctx := labtest.Context(t, 30*time.Second)

	// Keys until both shards have one.
	var keys []string
	shards := map[string]bool{}
	for i := 0; len(shards) < 2 && i < 100; i++ {
		key := fmt.Sprintf("lock:{wallet:%d}", i)
		shard, err := ring.GetShardClientForKey(key)
		if err != nil {
			t.Fatal(err)
		}
		if !shards[shard.Options().Addr] {
			shards[shard.Options().Addr] = true
			keys = append(keys, key)
		}
	}
	if len(keys) < 2 {
		t.Fatal("no key found for the second shard")
	}
	for _, key := range keys {
		shard, _ := ring.GetShardClientForKey(key)
		owner := mustFairAcquire(t, f, key, 10*time.Second)
		next := acquireAsync(ctx, f, key, 10*time.Second)
		waitQueued(t, shard, key, 1)
		owner.Release(ctx)
		r := await(t, next, slack, "the waiter on "+key)
		if r.err != nil {
			t.Fatalf("the waiter on %s: %v", key, r.err)
		}
		if n := shard.Exists(ctx, tagOf(key)+":handoff").Val(); n != 1 {
			t.Errorf("%s: the hand-off stream is not on the lock's shard", key)
		}
		r.l.Release(ctx)
	}
}

// ReleaseAfter sends the holder's last write and the hand-off in one
// round trip, the write first: the waiter handed the lock reads it.
func TestFair_releaseAfterHandsOffAfterTheWrite(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 20*time.Second)
	balance := strings.TrimSuffix(key, "lock:{wallet:1}") + "balance:{wallet:1}"
	t.Cleanup(func() { rdb.Del(context.Background(), balance) })
	f := newFair(t, rdb)
	owner := mustFairAcquire(t, f, key, 10*time.Second)
	next := acquireAsync(ctx, f, key, 10*time.Second)
	waitQueued(t, rdb, key, 1)
	p := rdb.Pipeline()
	p.Set(ctx, balance, "80", 0)
	if err := owner.ReleaseAfter(ctx, p); err != nil {
		t.Fatalf("ReleaseAfter: %v", err)
	}
	r := await(t, next, slack, "the waiter")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := rdb.Get(ctx, balance).Val(); got != "80" {
		t.Errorf("the next holder reads %q, want the write before the release, 80", got)
	}
	r.l.Release(ctx)
}

// On a Redis Cluster (here one node of the test's own that serves every
// slot), the fenced and the fair lock work for every key they accept:
// each key they write is in the lock key's slot, as CLUSTER KEYSLOT says.
// A script whose keys span two slots would fail with CROSSSLOT. (It
// checks package lock's fenced keys too, on the same node.)
func TestKeys_everyAcceptedKeySharesTheLockKeysSlot(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t, "--cluster-enabled", "yes")
	node := srv.Client(t)
	ctx := labtest.Context(t, time.Minute)
	if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatalf("CLUSTER ADDSLOTSRANGE: %v", err)
	}
	for !strings.Contains(node.ClusterInfo(ctx).Val(), "cluster_state:ok") {
		if ctx.Err() != nil {
			t.Fatal("the one-node cluster never said cluster_state:ok")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Not a vacuous check: this node refuses a script over two slots.
	if err := node.Eval(ctx, "return 1", []string{"a", "b"}).Err(); err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("a script over two slots: %v, want CROSSSLOT", err)
	}
	rdb := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{srv.Addr}, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	f := newFair(t, rdb)

	keys := []string{"lock:7", "app:lock:{wallet:42}", "{x}", "a}{b}", "lock:{7", "{", "{wallet:42}:lock"}
	seen := map[string]bool{} // keys of the keys before: fence counters stay
	for _, key := range keys {
		slot := node.ClusterKeySlot(ctx, key).Val()
		inSlot := func(what string) {
			t.Helper()
			all, err := node.Keys(ctx, "*").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range all {
				if seen[k] {
					continue
				}
				if s := node.ClusterKeySlot(ctx, k).Val(); s != slot {
					t.Errorf("%s on %q wrote %q in slot %d, the lock key is in slot %d", what, key, k, s, slot)
				}
			}
		}
		l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), 10*time.Second)
		if err != nil {
			t.Errorf("AcquireFenced(%q): %v", key, err)
			continue
		}
		inSlot("AcquireFenced")
		if err := l.Release(ctx); err != nil {
			t.Errorf("Release(%q): %v", key, err)
		}
		if _, err := lock.RaiseFence(ctx, rdb, lock.FenceKey(key), 5); err != nil {
			t.Errorf("RaiseFence(%q): %v", key, err)
		}
		// A waiter queues behind the holder, so that the queue and the
		// presence key exist while we look.
		held, err := f.AcquireFenced(ctx, key, 10*time.Second)
		if err != nil {
			t.Errorf("Fair.AcquireFenced(%q): %v", key, err)
			continue
		}
		waiter := acquireAsync(ctx, f, key, 10*time.Second)
		waitQueued(t, node, key, 1)
		inSlot("Fair.AcquireFenced")
		if err := held.Release(ctx); err != nil {
			t.Errorf("Fair Release(%q): %v", key, err)
		}
		for _, k := range node.Keys(ctx, "*").Val() {
			seen[k] = true
		}
		r := await(t, waiter, 10*time.Second, "the waiter")
		if r.err != nil {
			t.Errorf("the waiter on %q: %v", key, r.err)
		} else if err := r.l.Release(ctx); err != nil {
			t.Errorf("the waiter's Release(%q): %v", key, err)
		}
	}
}
