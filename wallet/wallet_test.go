package wallet_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet"
)

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		t       wallet.Tally
		balance int64
		line    string
	}{
		{"every spend recorded", wallet.Tally{Accepted: 10}, 0, "accepted=10 balance=0 expected=0 OK"},
		{"lost updates", wallet.Tally{Accepted: 50}, 80, "accepted=50 balance=80 expected=-400 BROKEN"},
		{"one spend too many", wallet.Tally{Accepted: 11}, 0, "accepted=11 balance=0 expected=-10 BROKEN"},
		{"unknown, none landed", wallet.Tally{Accepted: 8, Unknown: 2}, 20, "accepted=8 unknown=2 balance=20 expected=0..20 OK"},
		{"unknown, both landed", wallet.Tally{Accepted: 8, Unknown: 2}, 0, "accepted=8 unknown=2 balance=0 expected=0..20 OK"},
		{"unknown, yet one too many", wallet.Tally{Accepted: 8, Unknown: 2}, 30, "accepted=8 unknown=2 balance=30 expected=0..20 BROKEN"},
		{"not a whole number of spends", wallet.Tally{Accepted: 8, Unknown: 2}, 15, "accepted=8 unknown=2 balance=15 expected=0..20 BROKEN"},
		{"below zero", wallet.Tally{Accepted: 0, Unknown: 20}, -10, "accepted=0 unknown=20 balance=-10 expected=-100..100 BROKEN"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wallet.Check(100, 10, tt.t, tt.balance).String(); got != tt.line {
				t.Errorf("got  %s\nwant %s", got, tt.line)
			}
		})
	}
}

// Hammer counts every kind of result, and starts every call before any
// of them returns.
func TestHammer_countsWhatTheCallsReport(t *testing.T) {
	var calls, started atomic.Int32
	release := make(chan struct{})
	tally := wallet.Hammer(40, func() (bool, error) {
		if started.Add(1) == 40 {
			close(release)
		}
		<-release
		switch calls.Add(1) % 4 {
		case 0:
			return true, nil
		case 1:
			return false, nil
		case 2:
			return false, errors.New("refused by the server")
		}
		return false, wallet.WriteError("k", context.DeadlineExceeded)
	})
	if tally.Accepted != 10 || tally.Refused != 10 || tally.Unknown != 10 || len(tally.Errors) != 20 {
		t.Errorf("tally = %d accepted, %d refused, %d unknown, %d errors; want 10, 10, 10, 20", tally.Accepted, tally.Refused, tally.Unknown, len(tally.Errors))
	}
}

// A reply from the server says a write did not happen; a lost reply says
// nothing, and the spend's outcome is unknown.
func TestWriteError_unknownUnlessTheServerReplied(t *testing.T) {
	if err := wallet.WriteError("k", reply("READONLY You can't write against a read only replica.")); errors.Is(err, wallet.ErrUnknownOutcome) {
		t.Errorf("a READONLY reply: %v, want a known failure", err)
	}
	if err := wallet.WriteError("k", context.DeadlineExceeded); !errors.Is(err, wallet.ErrUnknownOutcome) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a timeout: %v, want ErrUnknownOutcome wrapping the timeout", err)
	}
}

// reply is an error reply from Redis, a redis.Error.
type reply string

func (r reply) Error() string { return string(r) }
func (reply) RedisError()     {}

func TestSpend(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + wallet.BalanceKey
	ctx := t.Context()

	t.Run("takes the amount when the balance covers it", func(t *testing.T) {
		rdb.Set(ctx, key, 100, 0)
		if ok, err := wallet.Spend(ctx, rdb, key, 10, time.Millisecond); !ok || err != nil {
			t.Fatalf("Spend = %v, %v; want true, nil", ok, err)
		}
		if got := rdb.Get(ctx, key).Val(); got != "90" {
			t.Errorf("balance = %s, want 90", got)
		}
	})
	t.Run("refuses and writes nothing when it does not", func(t *testing.T) {
		rdb.Set(ctx, key, 5, 0)
		if ok, err := wallet.Spend(ctx, rdb, key, 10, time.Millisecond); ok || err != nil {
			t.Fatalf("Spend = %v, %v; want false, nil", ok, err)
		}
		if got := rdb.Get(ctx, key).Val(); got != "5" {
			t.Errorf("balance = %s, want 5", got)
		}
	})
	t.Run("writes nothing once its context ends mid-work", func(t *testing.T) {
		rdb.Set(ctx, key, 100, 0)
		cause := errors.New("the lease was lost")
		wctx, cancel := context.WithCancelCause(ctx)
		time.AfterFunc(10*time.Millisecond, func() { cancel(cause) })
		ok, err := wallet.Spend(wctx, rdb, key, 10, time.Minute)
		if ok || !errors.Is(err, cause) {
			t.Fatalf("Spend = %v, %v; want false and an error naming the cause", ok, err)
		}
		if got := rdb.Get(ctx, key).Val(); got != "100" {
			t.Errorf("balance = %s, want 100 untouched", got)
		}
	})
	t.Run("says which key has no balance", func(t *testing.T) {
		_, err := wallet.Spend(ctx, rdb, key+":missing", 10, 0)
		if !errors.Is(err, redis.Nil) || !strings.Contains(err.Error(), key+":missing") {
			t.Errorf("Spend on a missing key: %v", err)
		}
	})
}

// Fifty spends at once with nothing to keep them apart lose updates: the
// lesson of step 1, which the race detector cannot see.
func TestSpend_withoutALockLosesUpdates(t *testing.T) {
	rdb := testenv.Redis(t)
	key := testenv.Prefix(t, rdb) + wallet.BalanceKey
	ctx := t.Context()
	rdb.Set(ctx, key, 100, 0)
	tally := wallet.Hammer(50, func() (bool, error) { return wallet.Spend(ctx, rdb, key, 10, 2*time.Millisecond) })
	balance, err := rdb.Get(ctx, key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	if v := wallet.Check(100, 10, tally, balance); v.OK {
		t.Errorf("%s: want BROKEN", v)
	}
}

// Every call is in flight at once: each waits on a barrier that opens
// only when all n have entered. A Hammer that ran calls one after another,
// or in a smaller pool, would never open it; one shared timeout turns
// that into errors instead of a hang.
func TestHammer_runsAllAtOnce(t *testing.T) {
	const n = 50
	var entered atomic.Int32
	open := make(chan struct{})
	timeout, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tally := wallet.Hammer(n, func() (bool, error) {
		if entered.Add(1) == n {
			close(open)
		}
		select {
		case <-open:
			return true, nil
		case <-timeout.Done():
			return false, errors.New("the barrier never opened")
		}
	})
	if len(tally.Errors) > 0 || tally.Accepted != n {
		t.Errorf("tally = %+v, want %d accepted: the calls did not all run at once", tally, n)
	}
}
