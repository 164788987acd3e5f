package harness_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/labtest"
)

func TestTake_aSecondRunOnThePrefixIsRefusedAtOnce(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := labtest.Prefix(t, rdb)
	ctx := t.Context()

	first, err := harness.TakeLease(ctx, rdb, prefix)
	if err != nil {
		t.Fatalf("first Take: %v", err)
	}
	start := time.Now()
	_, err = harness.TakeLease(ctx, rdb, prefix)
	if !errors.Is(err, harness.ErrBusy) {
		t.Fatalf("second Take: err = %v, want ErrBusy", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("the refusal took %v, want it at once", d)
	}
	if first.Context().Err() != nil {
		t.Errorf("the first run's lease context ended: %v", context.Cause(first.Context()))
	}
	if err := first.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	second, err := harness.TakeLease(ctx, rdb, prefix)
	if err != nil {
		t.Fatalf("Take after Close: %v", err)
	}
	if err := second.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := rdb.Exists(ctx, harness.LeaseKey(prefix)).Val(); n != 0 {
		t.Errorf("the lease key is still there after Close")
	}
}

func TestLease_contextEndsWhenTheLeaseIsLost(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := labtest.Prefix(t, rdb)
	l, err := harness.TakeLease(t.Context(), rdb, prefix)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	defer l.Close(context.Background())
	rdb.Del(t.Context(), harness.LeaseKey(prefix)) // someone deleted it
	select {
	case <-l.Context().Done():
	case <-time.After(harness.LeaseTTL + 5*time.Second):
		t.Fatal("the lease context did not end after the lease was lost")
	}
}

func TestLease_CloseOnNil(t *testing.T) {
	var l *harness.Lease
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("Close on nil = %v, want nil", err)
	}
}

func TestLease_ridesOutARedisStallShorterThanTheTTL(t *testing.T) {
	srv := labtest.StartRedis(t)
	rdb := srv.Use(t)
	const prefix = "test:runlease:stall:"
	l, err := harness.TakeLease(t.Context(), rdb, prefix)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	defer l.Close(context.Background())
	srv.Freeze(t)
	time.Sleep(harness.LeaseTTL / 2) // several refreshes fail meanwhile
	srv.Thaw()
	time.Sleep(harness.LeaseTTL / 3) // and the next one gets through
	if err := l.Context().Err(); err != nil {
		t.Fatalf("the lease was given up after a %v stall: %v", harness.LeaseTTL/2, context.Cause(l.Context()))
	}
	if err := l.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

func TestLease_CloseSendsAReleaseThatGotNoAnswerAgain(t *testing.T) {
	srv := labtest.StartRedis(t)
	rdb := srv.Use(t)
	const prefix = "test:runlease:close:"
	l, err := harness.TakeLease(t.Context(), rdb, prefix)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	srv.Freeze(t)
	thawed := time.AfterFunc(3*time.Second, srv.Thaw) // the first releases get no answer
	defer thawed.Stop()
	if err := l.Close(t.Context()); err != nil {
		t.Fatalf("Close across a %v stall = %v, want nil", 3*time.Second, err)
	}
	srv.Thaw()
	if n := rdb.Exists(t.Context(), harness.LeaseKey(prefix)).Val(); n != 0 {
		t.Error("the lease key is still there after Close")
	}
}
