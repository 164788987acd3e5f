package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/lock"
)

// A TTL far longer than any test: leases here end by Release or by the
// simulated restart, never by expiry, so nothing depends on timing.
const ttl = time.Minute

type fixture struct {
	rdb   redis.UniversalClient
	store *ledger.Store
	key   string // the lock key
	id    int64  // the wallet, holding 100 at the start
}

func setup(t *testing.T) fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rdb := testenv.Redis(t)
	pool := testenv.Postgres(t)
	store, err := ledger.Open(ctx, pool, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	f := fixture{rdb: rdb, store: store, key: ledger.LockKey(labtest.Prefix(t, rdb), 1), id: labtest.WalletID(t)}
	if err := store.Reset(ctx, f.id, 100); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := store.DeleteRange(ctx, f.id, 1); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return f
}

// fenced takes the lease on key with a fence, runs write with it, heals
// the counter when PostgreSQL refused the fence, and gives the lease
// back: the load test's fenced strategy, and the drill's.
func fenced(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration, write func(ctx context.Context, fence int64) (bool, error)) (bool, error) {
	l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), ttl)
	if err != nil {
		return false, err
	}
	defer l.Release(ctx)
	ok, err := write(ctx, l.Fence)
	return ok, ledger.Heal(ctx, rdb, lock.FenceKey(key), err)
}

// spend is one fenced spend of 10 that reports the fence it held.
func (f fixture) spend(ctx context.Context) (fence int64, ok bool, err error) {
	ok, err = fenced(ctx, f.rdb, f.key, ttl, func(ctx context.Context, fc int64) (bool, error) {
		fence = fc
		return f.store.SpendFenced(ctx, f.id, fc, 10, 0)
	})
	return fence, ok, err
}

func (f fixture) wantBalance(t *testing.T, want int64) {
	t.Helper()
	got, err := f.store.Balance(testCtx(t), f.id)
	if err != nil {
		t.Fatalf("Balance: %v", err)
	}
	if got != want {
		t.Errorf("balance = %d, want %d", got, want)
	}
}

func (f fixture) counter(t *testing.T) int64 {
	t.Helper()
	n, err := f.rdb.Get(testCtx(t), lock.FenceKey(f.key)).Int64()
	if err != nil {
		t.Fatalf("GET fence counter: %v", err)
	}
	return n
}

func wantStale(t *testing.T, err error, fence, highest int64) {
	t.Helper()
	var stale *ledger.StaleFenceError
	if !errors.As(err, &stale) {
		t.Fatalf("err = %v, want a *ledger.StaleFenceError", err)
	}
	if stale.Fence != fence || stale.Highest != highest {
		t.Errorf("refused fence %d with %d in PostgreSQL, want fence %d refused with %d", stale.Fence, stale.Highest, fence, highest)
	}
}

// A Redis restart loses the lease and the fence counter while holder A
// (fence 3) has read and not yet written. The next holder draws fence 1
// again: PostgreSQL refuses it, and the refusal heals the counter, so the
// holder after gets fence 4 and spends. A's late write is refused too.
// Every step waits for the previous one: there is no timing here.
func TestHeal_healsTheCounterAfterARedisRestart(t *testing.T) {
	f := setup(t)
	ctx := testCtx(t)

	for i, want := range []int64{1, 2} {
		fence, ok, err := f.spend(ctx)
		if err != nil || !ok || fence != want {
			t.Fatalf("spend %d = fence %d, %v, %v; want fence %d, true, nil", i+1, fence, ok, err, want)
		}
	}

	// A claims the row with fence 3 and stalls until told to write.
	claimed, resume := make(chan int64), make(chan struct{})
	type result struct {
		ok  bool
		err error
	}
	aDone := make(chan result, 1)
	go func() {
		ok, err := fenced(ctx, f.rdb, f.key, ttl, func(ctx context.Context, fence int64) (bool, error) {
			bal, err := f.store.Claim(ctx, f.id, fence)
			claimed <- fence
			if err != nil {
				return false, err
			}
			select {
			case <-resume:
			case <-ctx.Done():
				return false, ctx.Err()
			}
			if err := f.store.WriteFenced(ctx, f.id, fence, bal-10); err != nil {
				return false, err
			}
			return true, nil
		})
		aDone <- result{ok, err}
	}()
	if fence := <-claimed; fence != 3 {
		t.Fatalf("A holds fence %d, want 3", fence)
	}

	// The restart: Redis comes back empty, without A's lease or the counter.
	if err := f.rdb.Del(ctx, f.key, lock.FenceKey(f.key)).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}

	// B draws fence 1, below the 3 PostgreSQL holds: refused, and healed.
	fence, ok, err := f.spend(ctx)
	if ok || fence != 1 {
		t.Errorf("B = fence %d, ok %v; want fence 1 refused", fence, ok)
	}
	wantStale(t, err, 1, 3)
	if got := f.counter(t); got != 3 {
		t.Errorf("after the refusal the counter is %d, want it raised to 3", got)
	}
	f.wantBalance(t, 80)

	// C draws fence 4 and spends: spends have resumed.
	fence, ok, err = f.spend(ctx)
	if err != nil || !ok || fence != 4 {
		t.Fatalf("C = fence %d, %v, %v; want fence 4, true, nil", fence, ok, err)
	}
	f.wantBalance(t, 70)

	// A wakes and writes 70 - computed from the 80 it read - with fence 3.
	close(resume)
	a := <-aDone
	if a.ok {
		t.Error("A's stale write was accepted")
	}
	wantStale(t, a.err, 3, 4)
	f.wantBalance(t, 70)
	if got := f.counter(t); got != 4 {
		t.Errorf("counter = %d, want 4: healing must never lower it", got)
	}
}

// The sharpest case of a restart: the counter comes back to exactly the
// fence a paused holder still carries. A (fence 1) claims and stalls;
// Redis restarts; B draws fence 1 as well. Sharing the row would let A's
// stale write through, so PostgreSQL refuses a fence it has already seen.
func TestHeal_restartHandsOutTheSameFenceAgain(t *testing.T) {
	f := setup(t)
	ctx := testCtx(t)

	aFence, err := lock.AcquireFenced(ctx, f.rdb, f.key, lock.FenceKey(f.key), ttl)
	if err != nil {
		t.Fatalf("A: AcquireFenced: %v", err)
	}
	read, err := f.store.Claim(ctx, f.id, aFence.Fence)
	if err != nil {
		t.Fatalf("A: Claim: %v", err)
	}

	if err := f.rdb.Del(ctx, f.key, lock.FenceKey(f.key)).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	fence, ok, err := f.spend(ctx)
	if ok || fence != aFence.Fence {
		t.Fatalf("B = fence %d, ok %v; want fence %d again, refused", fence, ok, aFence.Fence)
	}
	wantStale(t, err, fence, aFence.Fence)

	// Healed: the next holder spends with a fence above A's.
	if fence, ok, err := f.spend(ctx); err != nil || !ok || fence <= aFence.Fence {
		t.Fatalf("C = fence %d, %v, %v; want a fence above %d, true, nil", fence, ok, err, aFence.Fence)
	}
	// A wakes: its write, computed from the 100 it read, is refused.
	if err := f.store.WriteFenced(ctx, f.id, aFence.Fence, read-10); !errors.Is(err, ledger.ErrStaleFence) {
		t.Errorf("A's stale write: err = %v, want ErrStaleFence", err)
	}
	f.wantBalance(t, 90)
}

// Only a stale fence heals: any other error leaves the counter alone.
func TestHeal_otherErrorsDoNotTouchTheCounter(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := testCtx(t)
	key := ledger.LockKey(labtest.Prefix(t, rdb), 1)
	boom := errors.New("boom")
	_, err := fenced(ctx, rdb, key, ttl, func(context.Context, int64) (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want boom", err)
	}
	if n, _ := rdb.Get(ctx, lock.FenceKey(key)).Int64(); n != 1 {
		t.Errorf("counter = %d, want 1", n)
	}
}

func TestHeal_withSpendFencedSpendsAndRefusesShortFunds(t *testing.T) {
	f := setup(t)
	ctx := testCtx(t)
	spend := func() (bool, error) {
		return fenced(ctx, f.rdb, f.key, ttl, func(ctx context.Context, fence int64) (bool, error) {
			return f.store.SpendFenced(ctx, f.id, fence, 10, 0)
		})
	}
	for i := range 10 {
		ok, err := spend()
		if err != nil || !ok {
			t.Fatalf("spend %d with %d left = %v, %v; want true, nil", i+1, 100-10*i, ok, err)
		}
	}
	ok, err := spend()
	if ok || err != nil {
		t.Errorf("spend from 0 = %v, %v; want false, nil", ok, err)
	}
	f.wantBalance(t, 0)
}
