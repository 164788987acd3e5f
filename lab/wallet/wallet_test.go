package wallet_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/wallet"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		initial  int64
		amount   int64
		accepted int
		balance  int64
		want     string
	}{
		{"every spend recorded", 100, 10, 10, 0, "accepted=10 balance=0 expected=0 OK"},
		{"nothing accepted", 100, 10, 0, 100, "accepted=0 balance=100 expected=100 OK"},
		{"some money left", 100, 10, 3, 70, "accepted=3 balance=70 expected=70 OK"},
		{"lost updates", 100, 10, 50, 90, "accepted=50 balance=90 expected=-400 BROKEN"},
		{"balance below what the spends imply", 100, 10, 3, 60, "accepted=3 balance=60 expected=70 BROKEN"},
		// Overspending that was recorded faithfully is still wrong: a
		// wallet must never go below zero.
		{"negative balance that matches", 100, 10, 11, -10, "accepted=11 balance=-10 expected=-10 BROKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := wallet.Check(tt.initial, tt.amount, tt.accepted, tt.balance)
			if got := v.String(); got != tt.want {
				t.Errorf("Check(%d, %d, %d, %d).String() = %q, want %q",
					tt.initial, tt.amount, tt.accepted, tt.balance, got, tt.want)
			}
			if wantOK := strings.HasSuffix(tt.want, " OK"); v.OK != wantOK {
				t.Errorf("OK = %v, want %v", v.OK, wantOK)
			}
		})
	}
}

func TestCheckUnknown(t *testing.T) {
	const big = int64(1) << 62
	tests := []struct {
		name              string
		initial, amount   int64
		accepted, unknown int
		balance           int64
		want              string
		landed            int
	}{
		{"no unknown spend landed", 100, 10, 5, 3, 50, "accepted=5 unknown=3 balance=50 expected=20..50 OK", 0},
		{"two of three landed", 100, 10, 5, 3, 30, "accepted=5 unknown=3 balance=30 expected=20..50 OK", 2},
		{"every unknown spend landed", 100, 10, 5, 3, 20, "accepted=5 unknown=3 balance=20 expected=20..50 OK", 3},
		{"more money gone than the spends allow", 100, 10, 5, 3, 10, "accepted=5 unknown=3 balance=10 expected=20..50 BROKEN", -1},
		{"money appeared", 100, 10, 5, 3, 60, "accepted=5 unknown=3 balance=60 expected=20..50 BROKEN", -1},
		{"between two spends", 100, 10, 5, 3, 45, "accepted=5 unknown=3 balance=45 expected=20..50 BROKEN", -1},
		{"below zero even if it fits", 100, 10, 9, 3, -10, "accepted=9 unknown=3 balance=-10 expected=-20..10 BROKEN", -1},
		// 5 x 2^62 does not fit an int64: wrapped around, the expected
		// balance would be 0 and a false OK.
		{"overflow is never OK", big, big, 5, 0, 0, "accepted=5 balance=0 expected=-18446744073709551616 BROKEN", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := wallet.CheckUnknown(tt.initial, tt.amount, tt.accepted, tt.unknown, tt.balance)
			if got := v.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if v.Landed != tt.landed {
				t.Errorf("Landed = %d, want %d", v.Landed, tt.landed)
			}
			if v.OK != (tt.landed >= 0) {
				t.Errorf("OK = %v, want %v", v.OK, tt.landed >= 0)
			}
		})
	}
}

func TestHammer_countsUnknownOutcomesApart(t *testing.T) {
	tally := wallet.Hammer(6, func(i int) (bool, error) {
		switch i % 3 {
		case 0:
			return true, nil
		case 1:
			return false, fmt.Errorf("spend %d: %w", i, wallet.ErrUnknownOutcome)
		default:
			return false, errors.New("refused by a server reply")
		}
	})
	if tally.Accepted != 2 || tally.Unknown != 2 || len(tally.Errors) != 4 {
		t.Errorf("tally = %+v, want 2 accepted, 2 unknown, 4 errors", tally)
	}
}

func TestWriteError_serverReplyIsNotUnknown(t *testing.T) {
	if err := wallet.WriteError("k", context.DeadlineExceeded); !errors.Is(err, wallet.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("timeout: %v, want ErrUnknownOutcome and the cause", err)
	}
	if err := wallet.WriteError("k", redis.Nil); errors.Is(err, wallet.ErrUnknownOutcome) {
		t.Errorf("server reply: %v, want a definite failure", err)
	}
}

func TestBalanceKey_sharesHashTagWithLockKey(t *testing.T) {
	tests := []struct {
		prefix string
		id     int64
		bal    string
		lock   string
	}{
		{wallet.DefaultPrefix, wallet.DemoWallet, "walletlock:demo:balance:{wallet:42}", "walletlock:demo:lock:{wallet:42}"},
		{"t:", -7, "t:balance:{wallet:-7}", "t:lock:{wallet:-7}"},
	}
	for _, tt := range tests {
		if got := wallet.BalanceKey(tt.prefix, tt.id); got != tt.bal {
			t.Errorf("BalanceKey(%q, %d) = %q, want %q", tt.prefix, tt.id, got, tt.bal)
		}
		if got := wallet.LockKey(tt.prefix, tt.id); got != tt.lock {
			t.Errorf("LockKey(%q, %d) = %q, want %q", tt.prefix, tt.id, got, tt.lock)
		}
	}
}

func TestHammer_counts(t *testing.T) {
	errBoom := errors.New("boom")
	const n = 30
	var (
		mu   sync.Mutex
		seen []int
	)
	tally := wallet.Hammer(n, func(i int) (bool, error) {
		mu.Lock()
		seen = append(seen, i)
		mu.Unlock()
		switch i % 3 {
		case 0:
			return true, nil
		case 1:
			return false, nil
		default:
			// An error wins over the bool that comes with it.
			return true, fmt.Errorf("spender %d: %w", i, errBoom)
		}
	})
	if tally.Accepted != 10 || tally.Refused != 10 || len(tally.Errors) != 10 {
		t.Errorf("tally = %d accepted, %d refused, %d errors; want 10 of each",
			tally.Accepted, tally.Refused, len(tally.Errors))
	}
	for _, err := range tally.Errors {
		if !errors.Is(err, errBoom) {
			t.Errorf("tally holds %v, want the errors fn returned", err)
		}
	}
	slices.Sort(seen)
	for i, got := range seen {
		if got != i {
			t.Fatalf("fn saw numbers %v, want each of 0..%d once", seen, n-1)
		}
	}
	if len(seen) != n {
		t.Fatalf("fn ran %d times, want %d", len(seen), n)
	}
}

func TestHammer_zero(t *testing.T) {
	tally := wallet.Hammer(0, func(int) (bool, error) {
		t.Error("fn ran with n = 0")
		return true, nil
	})
	if tally.Accepted != 0 || tally.Refused != 0 || len(tally.Errors) != 0 {
		t.Errorf("tally = %+v, want all zero", tally)
	}
}

// Every call must be in flight at once: each fn waits on a barrier that
// opens only when all n have entered. A Hammer that ran calls one after
// another, or in a smaller pool, would never open it; one shared timeout
// turns that into errors instead of a hang.
func TestHammer_runsAllAtOnce(t *testing.T) {
	const n = 50
	var (
		entered atomic.Int32
		open    = make(chan struct{})
	)
	timeout, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tally := wallet.Hammer(n, func(i int) (bool, error) {
		if entered.Add(1) == n {
			close(open)
		}
		select {
		case <-open:
			return true, nil
		case <-timeout.Done():
			return false, fmt.Errorf("spender %d: only %d of %d calls entered", i, entered.Load(), n)
		}
	})
	if len(tally.Errors) > 0 {
		t.Fatalf("the barrier never opened: %v", tally.Errors[0])
	}
	if tally.Accepted != n {
		t.Errorf("accepted = %d, want %d", tally.Accepted, n)
	}
}

// setBalance stores a balance under a fresh key with a one hour TTL. A
// write by Spend (a plain SET) clears the TTL, so a TTL still there proves
// that nothing was written, even a value equal to the old one.
func setBalance(t *testing.T, rdb redis.UniversalClient, balance int64) string {
	t.Helper()
	ctx := context.Background()
	key := wallet.BalanceKey(labtest.Prefix(t, rdb), wallet.DemoWallet)
	if err := wallet.Set(ctx, rdb, key, balance); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Expire(ctx, key, time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	return key
}

// assertUntouched fails unless key still holds balance and the TTL that
// setBalance gave it.
func assertUntouched(t *testing.T, rdb redis.UniversalClient, key string, balance int64) {
	t.Helper()
	ctx := context.Background()
	got, err := wallet.Balance(ctx, rdb, key)
	if err != nil {
		t.Fatal(err)
	}
	if got != balance {
		t.Errorf("balance = %d, want %d untouched", got, balance)
	}
	ttl, err := rdb.PTTL(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ttl <= 0 {
		t.Errorf("PTTL = %v after Spend, want the TTL kept: the key was written", ttl)
	}
}

func TestSpend(t *testing.T) {
	rdb := labtest.Redis(t)
	tests := []struct {
		name        string
		balance     int64
		amount      int64
		wantOK      bool
		wantBalance int64
	}{
		{"enough funds", 100, 30, true, 70},
		{"exactly enough", 10, 10, true, 0},
		{"short by one", 9, 10, false, 9},
		{"empty wallet", 0, 10, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			key := setBalance(t, rdb, tt.balance)
			ok, err := wallet.Spend(ctx, rdb, key, tt.amount, 0)
			if err != nil {
				t.Fatalf("Spend: %v", err)
			}
			if ok != tt.wantOK {
				t.Errorf("Spend(%d from %d) = %v, want %v", tt.amount, tt.balance, ok, tt.wantOK)
			}
			if !ok {
				assertUntouched(t, rdb, key, tt.balance)
				return
			}
			got, err := wallet.Balance(ctx, rdb, key)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.wantBalance {
				t.Errorf("balance = %d, want %d", got, tt.wantBalance)
			}
		})
	}
}

func TestSpend_missingWallet(t *testing.T) {
	rdb := labtest.Redis(t)
	ctx := context.Background()
	key := wallet.BalanceKey(labtest.Prefix(t, rdb), wallet.DemoWallet)
	ok, err := wallet.Spend(ctx, rdb, key, 10, 0)
	if !errors.Is(err, wallet.ErrNoWallet) {
		t.Fatalf("Spend on a missing key = %v, %v; want ErrNoWallet", ok, err)
	}
	if !strings.Contains(err.Error(), key) {
		t.Errorf("error %q does not name the key %s", err, key)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("Spend created %s", key)
	}
	if _, err := wallet.Balance(ctx, rdb, key); !errors.Is(err, wallet.ErrNoWallet) {
		t.Errorf("Balance on a missing key = %v, want ErrNoWallet", err)
	}
}

// readHook reports, once, that a GET has been answered: from then on Spend
// is past its read and in its work.
type readHook struct {
	once sync.Once
	done chan struct{}
}

func (h *readHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *readHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
func (h *readHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "get" {
			h.once.Do(func() { close(h.done) })
		}
		return err
	}
}

// waitThen calls end once read is closed, and gives up if ctx ends first
// (when Spend failed before its read), so that no goroutine outlives the
// test.
func waitThen(ctx context.Context, read <-chan struct{}, end func()) {
	select {
	case <-read:
		end()
	case <-ctx.Done():
	}
}

func TestSpend_contextEndsDuringWork(t *testing.T) {
	labtest.Redis(t) // skip once, not per case, when Redis is down
	errLeaseLost := errors.New("lease lost")
	// start returns the context for Spend; it ends it once the read is done
	// (the cancel cases) or lets its deadline end it (the others).
	tests := []struct {
		name      string
		start     func(read <-chan struct{}) (context.Context, context.CancelFunc)
		want      error
		wantCause error
	}{
		{
			name: "cancelled",
			start: func(read <-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				go func() { waitThen(ctx, read, func() { cancel() }) }()
				return ctx, cancel
			},
			want: context.Canceled,
		},
		{
			name: "cancelled with a cause",
			start: func(read <-chan struct{}) (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancelCause(context.Background())
				go func() { waitThen(ctx, read, func() { cancel(errLeaseLost) }) }()
				return ctx, func() { cancel(nil) }
			},
			want:      context.Canceled,
			wantCause: errLeaseLost,
		},
		{
			name: "deadline",
			start: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 150*time.Millisecond)
			},
			want: context.DeadlineExceeded,
		},
		{
			name: "deadline with a cause",
			start: func(<-chan struct{}) (context.Context, context.CancelFunc) {
				return context.WithTimeoutCause(context.Background(), 150*time.Millisecond, errLeaseLost)
			},
			want:      context.DeadlineExceeded,
			wantCause: errLeaseLost,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A client of its own: the hook watches this case's GET only.
			rdb := labtest.Redis(t)
			hook := &readHook{done: make(chan struct{})}
			rdb.AddHook(hook)
			key := setBalance(t, rdb, 100)

			ctx, cancel := tt.start(hook.done)
			defer cancel()
			// The work would take a minute: only the context can end it.
			ok, err := wallet.Spend(ctx, rdb, key, 10, time.Minute)
			if ok || !errors.Is(err, tt.want) {
				t.Fatalf("Spend = %v, %v; want false and an error matching %v", ok, err, tt.want)
			}
			if tt.wantCause != nil && !errors.Is(err, tt.wantCause) {
				t.Errorf("error %q does not carry the cause %q", err, tt.wantCause)
			}
			assertUntouched(t, rdb, key, 100)
		})
	}
}

func TestWork(t *testing.T) {
	if err := wallet.Work(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Work with a live context = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Zero work still reports a context that has ended: the caller must
	// not go on to write.
	if err := wallet.Work(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Work(0) with a cancelled context = %v, want context.Canceled", err)
	}
}

func TestSet_replaces(t *testing.T) {
	rdb := labtest.Redis(t)
	ctx := context.Background()
	key := wallet.BalanceKey(labtest.Prefix(t, rdb), wallet.DemoWallet)
	for _, want := range []int64{100, 7} {
		if err := wallet.Set(ctx, rdb, key, want); err != nil {
			t.Fatal(err)
		}
		got, err := wallet.Balance(ctx, rdb, key)
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Balance after Set(%d) = %d", want, got)
		}
	}
}

// Every prefix gets a block of ids of its own, whole, and far from the
// ids other programs use.
func TestFirstIDFor_aBlockPerPrefix(t *testing.T) {
	seen := map[int64]string{}
	for _, prefix := range []string{"walletlock:demo:step6:", "walletlock:demo:step6", "a:", "b:", "test:x:0001:", "test:x:0002:"} {
		id := wallet.FirstIDFor(prefix)
		if id < 1_000_000_000_000 || id > math.MaxInt64-wallet.IDBlock || id%wallet.IDBlock != 0 {
			t.Errorf("FirstIDFor(%q) = %d, want a multiple of %d from 10^12 up", prefix, id, wallet.IDBlock)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("FirstIDFor(%q) = FirstIDFor(%q) = %d", prefix, other, id)
		}
		seen[id] = prefix
		if wallet.FirstIDFor(prefix) != id {
			t.Errorf("FirstIDFor(%q) changes between calls", prefix)
		}
	}
}
