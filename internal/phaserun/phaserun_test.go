package phaserun_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/phaserun"
	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet"
)

// newRun starts a run of step 3 on a prefix of its own, with its output in
// the two buffers.
func newRun(t *testing.T) (x *phaserun.Run, stdout, stderr *bytes.Buffer) {
	t.Helper()
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	s, err := harness.Start(t.Context(), rdb, "step3-ttl", prefix)
	if err != nil {
		t.Fatal(err)
	}
	balance, lockKey := wallet.BalanceKey(prefix, 1), wallet.LockKey(prefix, 1)
	t.Cleanup(func() { s.Close(t.Output(), balance, lockKey) })
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	return &phaserun.Run{Step: "step3-ttl", Session: s, Redis: rdb, BalanceKey: balance, LockKey: lockKey,
		Initial: 100, Amount: 10, Report: harness.NewReport("step3-ttl"), Stdout: stdout, Stderr: stderr}, stdout, stderr
}

// spendOnce is a phase that takes one spend off a fresh balance by hand.
func spendOnce(x *phaserun.Run, problems ...string) phaserun.Phase {
	return phaserun.Phase{Name: "2", Run: func(ctx context.Context) (phaserun.Outcome, error) {
		if err := x.Fresh(ctx); err != nil {
			return phaserun.Outcome{}, err
		}
		if err := wallet.Set(ctx, x.Redis, x.BalanceKey, 90); err != nil {
			return phaserun.Outcome{}, err
		}
		v, err := x.Check(1, 0)
		return phaserun.Outcome{Verdict: v, Setting: "one spend", Story: "by hand", Problems: problems}, err
	}}
}

func TestRun_Phases(t *testing.T) {
	t.Run("a phase prints its three lines and exits 0 when it gives the lesson's verdict", func(t *testing.T) {
		x, stdout, stderr := newRun(t)
		if code := x.Phases([]phaserun.Phase{spendOnce(x)}); code != 0 || stderr.Len() > 0 {
			t.Fatalf("Phases = %d, stderr %q; want 0 and nothing", code, stderr)
		}
		if want := "phase 2: one spend\n  by hand\n  accepted=1 balance=90 expected=90 OK\n"; stdout.String() != want {
			t.Errorf("stdout = %q, want %q", stdout, want)
		}
	})
	t.Run("a problem beyond the verdict is one line and exit 1", func(t *testing.T) {
		x, _, stderr := newRun(t)
		if code := x.Phases([]phaserun.Phase{spendOnce(x, "a release failed")}); code != 1 || stderr.String() != "step3-ttl: phase 2: a release failed\n" {
			t.Errorf("Phases = %d, stderr %q; want 1 and the problem", code, stderr)
		}
	})
	t.Run("a failing phase ends the run with exit 1", func(t *testing.T) {
		x, stdout, stderr := newRun(t)
		boom := phaserun.Phase{Name: "1", Run: func(context.Context) (phaserun.Outcome, error) { return phaserun.Outcome{}, errors.New("boom") }}
		if code := x.Phases([]phaserun.Phase{boom, spendOnce(x)}); code != 1 || stdout.Len() > 0 || stderr.String() != "step3-ttl: phase 1: boom\n" {
			t.Errorf("Phases = %d, stdout %q, stderr %q; want 1, nothing, and the error", code, stdout, stderr)
		}
	})
}
