package runlease_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"example.com/walletlock/internal/runlease"
	"example.com/walletlock/internal/testenv"
)

func TestTake_aSecondRunOnThePrefixIsRefusedAtOnce(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx := t.Context()

	first, err := runlease.Take(ctx, rdb, prefix)
	if err != nil {
		t.Fatalf("first Take: %v", err)
	}
	start := time.Now()
	_, err = runlease.Take(ctx, rdb, prefix)
	if !errors.Is(err, runlease.ErrBusy) {
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
	second, err := runlease.Take(ctx, rdb, prefix)
	if err != nil {
		t.Fatalf("Take after Close: %v", err)
	}
	if err := second.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := rdb.Exists(ctx, runlease.Key(prefix)).Val(); n != 0 {
		t.Errorf("the lease key is still there after Close")
	}
}

func TestLease_contextEndsWhenTheLeaseIsLost(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	l, err := runlease.Take(t.Context(), rdb, prefix)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	defer l.Close(context.Background())
	rdb.Del(t.Context(), runlease.Key(prefix)) // someone deleted it
	select {
	case <-l.Context().Done():
	case <-time.After(runlease.TTL + 5*time.Second):
		t.Fatal("the lease context did not end after the lease was lost")
	}
}

func TestLease_CloseOnNil(t *testing.T) {
	var l *runlease.Lease
	if err := l.Close(context.Background()); err != nil {
		t.Errorf("Close on nil = %v, want nil", err)
	}
}

func TestLease_ridesOutARedisStallShorterThanTheTTL(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := srv.Use(t)
	const prefix = "test:runlease:stall:"
	l, err := runlease.Take(t.Context(), rdb, prefix)
	if err != nil {
		t.Fatalf("Take: %v", err)
	}
	defer l.Close(context.Background())
	srv.Freeze(t)
	time.Sleep(runlease.TTL / 2) // several refreshes fail meanwhile
	srv.Thaw()
	time.Sleep(runlease.TTL / 3) // and the next one gets through
	if err := l.Context().Err(); err != nil {
		t.Fatalf("the lease was given up after a %v stall: %v", runlease.TTL/2, context.Cause(l.Context()))
	}
	if err := l.Close(t.Context()); err != nil {
		t.Fatalf("Close: %v", err)
	}
}
