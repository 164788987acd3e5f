package ledger_test

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

func TestBalanceKey_sharesHashTagWithLockKey(t *testing.T) {
	tests := []struct {
		prefix string
		id     int64
		bal    string
		lock   string
	}{
		{ledger.DefaultPrefix, 42, "walletlock:demo:balance:{wallet:42}", "walletlock:demo:lock:{wallet:42}"},
		{"t:", -7, "t:balance:{wallet:-7}", "t:lock:{wallet:-7}"},
	}
	for _, tt := range tests {
		if got := ledger.BalanceKey(tt.prefix, tt.id); got != tt.bal {
			t.Errorf("BalanceKey(%q, %d) = %q, want %q", tt.prefix, tt.id, got, tt.bal)
		}
		if got := ledger.LockKey(tt.prefix, tt.id); got != tt.lock {
			t.Errorf("LockKey(%q, %d) = %q, want %q", tt.prefix, tt.id, got, tt.lock)
		}
	}
}

// Every prefix gets a block of ids of its own, whole, and far from the
// ids other programs use.
func TestFirstIDFor_aBlockPerPrefix(t *testing.T) {
	seen := map[int64]string{}
	for _, prefix := range []string{"walletlock:demo:step6:", "walletlock:demo:step6", "a:", "b:", "test:x:0001:", "test:x:0002:"} {
		id := ledger.FirstIDFor(prefix)
		if id < 1_000_000_000_000 || id > math.MaxInt64-ledger.IDBlock || id%ledger.IDBlock != 0 {
			t.Errorf("FirstIDFor(%q) = %d, want a multiple of %d from 10^12 up", prefix, id, ledger.IDBlock)
		}
		if other, ok := seen[id]; ok {
			t.Errorf("FirstIDFor(%q) = FirstIDFor(%q) = %d", prefix, other, id)
		}
		seen[id] = prefix
		if ledger.FirstIDFor(prefix) != id {
			t.Errorf("FirstIDFor(%q) changes between calls", prefix)
		}
	}
}

// With MaxAmount, the largest initial balance a run allows and more
// spends than any run makes, the check line's figures stay in an int64:
// wallet.Check counts in int64, and a figure that wrapped around could
// read as a false OK.
func TestMaxAmount_keepsTheCheckInAnInt64(t *testing.T) {
	const spends = 9_000_000_000_000
	if math.MaxInt64/ledger.MaxAmount < spends {
		t.Fatalf("MaxAmount %d times %d spends leaves an int64", ledger.MaxAmount, spends)
	}
	v := wallet.Check(math.MaxInt64, ledger.MaxAmount, wallet.Tally{Accepted: spends / 2, Unknown: spends / 2}, 0)
	if v.Expected != math.MaxInt64-ledger.MaxAmount*(spends/2) || v.Lowest != math.MaxInt64-ledger.MaxAmount*spends || v.OK {
		t.Errorf("Check at the bounds = %s, want exact figures and BROKEN", v)
	}
}

// A wallet's balance says how many of its spends of unknown outcome
// landed, or that it fits none of them.
func TestLanded(t *testing.T) {
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := wallet.Check(tt.initial, tt.amount, wallet.Tally{Accepted: tt.accepted, Unknown: tt.unknown}, tt.balance)
			if got := v.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := ledger.Landed(v, tt.amount); got != tt.landed {
				t.Errorf("Landed = %d, want %d", got, tt.landed)
			}
		})
	}
}

func TestJudge_walletByWallet(t *testing.T) {
	tests := []struct {
		name      string
		accepted  []int64
		balances  []int64
		wantCheck string
		wantOff   int
		wantMoney int64
	}{
		{"every wallet adds up", []int64{3, 0, 10}, []int64{70, 100, 0},
			"accepted=13 balance=170 expected=170 OK", 0, 0},
		// Two spends accepted, one recorded: 10 missing from wallet 0.
		{"a lost update", []int64{2, 1}, []int64{90, 90},
			"accepted=3 balance=180 expected=170 BROKEN", 1, 10},
		{"wallets off both ways", []int64{5, 0, 1}, []int64{80, 90, 90},
			"accepted=6 balance=260 expected=240 BROKEN", 2, 40},
		// The sums agree, the wallets do not: still BROKEN, with both counted.
		{"errors that cancel out in the sum", []int64{1, 1}, []int64{100, 80},
			"accepted=2 balance=180 expected=180 BROKEN", 2, 20},
		// Balances match what was accepted, but one went below zero.
		{"an overdraft", []int64{11}, []int64{-10},
			"accepted=11 balance=-10 expected=-10 BROKEN", 1, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, _, off, money := ledger.Judge(100, 10, tt.accepted, nil, tt.balances)
			if v.String() != tt.wantCheck || off != tt.wantOff || money != tt.wantMoney {
				t.Errorf("Judge = %q, %d off by %d; want %q, %d off by %d",
					v.String(), off, money, tt.wantCheck, tt.wantOff, tt.wantMoney)
			}
		})
	}
}

// A spend with an unknown outcome may have landed or not: a wallet is
// right when its balance fits some count of them, and the check line says
// how many landed in all.
func TestJudge_unknownOutcomes(t *testing.T) {
	tests := []struct {
		name       string
		accepted   []int64
		unknown    []int64
		balances   []int64
		wantCheck  string
		wantLanded int
		wantOff    int
		wantMoney  int64
	}{
		{"none of them landed", []int64{2, 1}, []int64{1, 0}, []int64{80, 90},
			"accepted=3 unknown=1 balance=170 expected=160..170 OK", 0, 0, 0},
		{"some landed", []int64{2, 1}, []int64{3, 2}, []int64{60, 80},
			"accepted=3 unknown=5 balance=140 expected=120..170 OK", 3, 0, 0},
		// Wallet 1 has no unknown spend: its 10 more are a lost update,
		// whatever wallet 0's unknown spends allow in the sum.
		{"the sum fits, a wallet does not", []int64{2, 1}, []int64{2, 0}, []int64{80, 80},
			"accepted=3 unknown=2 balance=160 expected=150..170 BROKEN", -1, 1, 10},
		{"below every count", []int64{1}, []int64{1}, []int64{70},
			"accepted=1 unknown=1 balance=70 expected=80..90 BROKEN", -1, 1, 10},
		{"between two counts", []int64{1}, []int64{2}, []int64{83},
			"accepted=1 unknown=2 balance=83 expected=70..90 BROKEN", -1, 1, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, landed, off, money := ledger.Judge(100, 10, tt.accepted, tt.unknown, tt.balances)
			if v.String() != tt.wantCheck || landed != tt.wantLanded || off != tt.wantOff || money != tt.wantMoney {
				t.Errorf("Judge = %q, landed %d, %d off by %d; want %q, landed %d, %d off by %d",
					v.String(), landed, off, money, tt.wantCheck, tt.wantLanded, tt.wantOff, tt.wantMoney)
			}
		})
	}
}

// The root's Spend, as the runs call it: through Observed, a history
// learns the balance it read; without an observer, nothing changes.
func TestObserved_tellsTheSpendsRead(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := labtest.Context(t, 10*time.Second)
	key := ledger.BalanceKey(labtest.Prefix(t, rdb), 1)
	if err := rdb.Set(ctx, key, 100, 0).Err(); err != nil {
		t.Fatal(err)
	}
	var read []int64
	observing := ledger.ObserveReads(ctx, func(b int64) { read = append(read, b) })
	for _, c := range []context.Context{observing, ctx} {
		if ok, err := wallet.Spend(c, ledger.Observed(c, rdb), key, 30, 0); !ok || err != nil {
			t.Fatalf("Spend = %v, %v", ok, err)
		}
	}
	if len(read) != 1 || read[0] != 100 {
		t.Errorf("reads seen = %v, want [100]: the observed spend's, alone", read)
	}
	if got, err := rdb.Get(ctx, key).Int64(); err != nil || got != 40 {
		t.Errorf("balance = %d, %v; want 40", got, err)
	}
}

// A spend of a balance that is not there fails, naming the key, and
// creates nothing: the runs count it as an error a retry cannot fix.
func TestSpend_missingWallet(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx := labtest.Context(t, 10*time.Second)
	key := ledger.BalanceKey(labtest.Prefix(t, rdb), 1)
	ok, err := wallet.Spend(ctx, rdb, key, 10, 0)
	if ok || err == nil || !errors.Is(err, redis.Nil) {
		t.Fatalf("Spend on a missing key = %v, %v; want an error matching redis.Nil", ok, err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Errorf("Spend created %s", key)
	}
}

// Whenever ctx ends during the work, the spend writes nothing, and its
// error carries why: the context's cause (a lost lease), or its end.
func TestSpend_contextEndsDuringWork(t *testing.T) {
	testenv.Redis(t) // skip once, not per case, when Redis is down
	errLeaseLost := errors.New("lease lost")
	tests := []struct {
		name  string
		start func() (context.Context, context.CancelFunc)
		want  error
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"cancelled with a cause", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancelCause(context.Background())
			time.AfterFunc(100*time.Millisecond, func() { cancel(errLeaseLost) })
			return ctx, func() { cancel(nil) }
		}, errLeaseLost},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 150*time.Millisecond)
		}, context.DeadlineExceeded},
		{"deadline with a cause", func() (context.Context, context.CancelFunc) {
			return context.WithTimeoutCause(context.Background(), 150*time.Millisecond, errLeaseLost)
		}, errLeaseLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb := testenv.Redis(t)
			key := ledger.BalanceKey(labtest.Prefix(t, rdb), 1)
			if err := rdb.Set(context.Background(), key, 100, time.Hour).Err(); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := tt.start()
			defer cancel()
			// The work would take a minute: only the context can end it.
			ok, err := wallet.Spend(ctx, rdb, key, 10, time.Minute)
			if ok || !errors.Is(err, tt.want) {
				t.Fatalf("Spend = %v, %v; want false and an error matching %v", ok, err, tt.want)
			}
			// A SET would have cleared the TTL: one still there proves
			// that nothing was written, even a value equal to the old one.
			if got, err := rdb.Get(context.Background(), key).Int64(); err != nil || got != 100 {
				t.Errorf("balance = %d, %v; want 100 untouched", got, err)
			}
			if ttl := rdb.PTTL(context.Background(), key).Val(); ttl <= 0 {
				t.Errorf("PTTL = %v after Spend, want the TTL kept: the key was written", ttl)
			}
		})
	}
}
