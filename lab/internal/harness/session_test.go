package harness_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/testenv"
)

func TestStart_aSecondRunOnThePrefixIsRefused(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	first, err := harness.Start(t.Context(), rdb, "prog", prefix)
	if err != nil {
		t.Fatal(err)
	}
	_, err = harness.Start(t.Context(), rdb, "prog", prefix)
	if !errors.Is(err, harness.ErrBusy) || !strings.Contains(err.Error(), prefix) || !strings.Contains(err.Error(), "-prefix") {
		t.Errorf("second Start: err = %v, want ErrBusy naming the prefix and -prefix", err)
	}
	var stderr bytes.Buffer
	first.Close(&stderr)
	second, err := harness.Start(t.Context(), rdb, "prog", prefix)
	if err != nil {
		t.Fatalf("Start after Close: %v", err)
	}
	second.Close(&stderr)
	if stderr.Len() > 0 {
		t.Errorf("Close wrote %q, want nothing", stderr.String())
	}
}

// After Ctrl-C the work's context ends at once, the clean-up context does
// not, and the clean-up ends CleanupTimeout after the Ctrl-C however late
// it is asked for.
func TestSession_cleanupEndsCleanupTimeoutAfterCtrlC(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ctx, ctrlC := context.WithCancel(t.Context())
	s, err := harness.Start(ctx, rdb, "prog", prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Output())

	before, cancel := s.Cleanup()
	defer cancel()
	if d, _ := before.Deadline(); time.Until(d) < harness.CleanupTimeout-time.Second {
		t.Errorf("before Ctrl-C the clean-up ends in %v, want about %v", time.Until(d), harness.CleanupTimeout)
	}
	if s.Interrupted() {
		t.Error("Interrupted before Ctrl-C")
	}
	pressed := time.Now()
	ctrlC()
	if !s.Interrupted() || s.Context().Err() == nil {
		t.Error("Ctrl-C did not end the work's context")
	}
	time.Sleep(500 * time.Millisecond)
	after, cancel := s.Cleanup()
	defer cancel()
	if after.Err() != nil {
		t.Error("the clean-up context ended with the Ctrl-C")
	}
	d, _ := after.Deadline()
	if end := d.Sub(pressed); end < harness.CleanupTimeout-200*time.Millisecond || end > harness.CleanupTimeout+200*time.Millisecond {
		t.Errorf("the clean-up asked for 500ms after Ctrl-C ends %v after it, want %v", end, harness.CleanupTimeout)
	}
}

func TestSession_closeDeletesTheKeysAndReleasesThePrefix(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	s, err := harness.Start(t.Context(), rdb, "prog", prefix)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Set(t.Context(), prefix+"a", 1, 0)
	rdb.Set(t.Context(), prefix+"b", 1, 0)
	var stderr bytes.Buffer
	s.Close(&stderr, prefix+"a", prefix+"b")
	if keys := rdb.Keys(t.Context(), prefix+"*").Val(); len(keys) > 0 || stderr.Len() > 0 {
		t.Errorf("after Close: keys %q, stderr %q; want none and nothing", keys, stderr.String())
	}
	if s.Context().Err() == nil {
		t.Error("the work's context outlives Close")
	}
}

// With the server frozen, Close gives up within the clean-up time and
// names the keys, with the command that deletes them.
func TestSession_closeNamesWhatAFrozenServerKeeps(t *testing.T) {
	srv := testenv.StartRedis(t)
	rdb := srv.Use(t)
	prefix := testenv.Prefix(t, rdb)
	s, err := harness.Start(t.Context(), rdb, "prog", prefix)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Set(t.Context(), prefix+"a", 1, 0)
	srv.Freeze(t)
	var stderr bytes.Buffer
	start := time.Now()
	s.Close(&stderr, prefix+"a")
	if took := time.Since(start); took > harness.CleanupTimeout+2*time.Second {
		t.Errorf("Close took %v with the server frozen, want about %v", took, harness.CleanupTimeout)
	}
	line := stderr.String()
	if strings.Count(line, "\n") != 1 || !strings.HasPrefix(line, "prog: ") || !strings.Contains(line, "redis-cli -h 127.0.0.1 -p ") ||
		!strings.Contains(line, " del '"+prefix+"a'") {
		t.Errorf("stderr = %q, want one line with the redis-cli command that deletes %sa", line, prefix)
	}
}

// A run whose lease is lost must stop: its keys are no longer its own.
func TestSession_losingTheLeaseEndsTheWork(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	s, err := harness.Start(t.Context(), rdb, "prog", prefix)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Output())
	rdb.Del(t.Context(), harness.LeaseKey(prefix)) // as if it had expired
	select {
	case <-s.Context().Done():
	case <-time.After(2 * harness.LeaseTTL):
		t.Fatal("the work's context outlived the lease")
	}
	if cause := context.Cause(s.Context()); !strings.Contains(cause.Error(), "lost the run lease") || s.Interrupted() {
		t.Errorf("cause %v, interrupted %v; want the lost lease, not Ctrl-C", cause, s.Interrupted())
	}
}

func TestAwait(t *testing.T) {
	rdb := testenv.Redis(t)
	ctx, ctrlC := context.WithCancel(t.Context())
	s, err := harness.Start(ctx, rdb, "prog", testenv.Prefix(t, rdb))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close(t.Output())
	if v, ok := harness.Await(s, func() int { return 7 }); v != 7 || !ok {
		t.Errorf("Await = %d, %v; want 7, true", v, ok)
	}
	// A call that outlives the Ctrl-C by less than the clean-up time is
	// waited for; one stuck for good is not.
	quick, stuck := make(chan struct{}), make(chan struct{})
	defer close(stuck)
	ctrlC()
	time.AfterFunc(300*time.Millisecond, func() { close(quick) })
	if v, ok := harness.Await(s, func() int { <-quick; return 8 }); v != 8 || !ok {
		t.Errorf("Await(a call that ends 300ms after Ctrl-C) = %d, %v; want 8, true", v, ok)
	}
	start := time.Now()
	if v, ok := harness.Await(s, func() int { <-stuck; return 9 }); v != 0 || ok {
		t.Errorf("Await(a stuck call) = %d, %v; want 0, false", v, ok)
	}
	if took := time.Since(start); took > harness.CleanupTimeout+2*time.Second {
		t.Errorf("Await waited %v for a stuck call, want at most about %v", took, harness.CleanupTimeout)
	}
}
