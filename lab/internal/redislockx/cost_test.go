package redislockx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"

	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.Join(redislock.ErrNotObtained, context.DeadlineExceeded), "gave up waiting"},
		{fmt.Errorf("lock: obtain k: gave up waiting: %w: %w", redislock.ErrNotObtained, context.DeadlineExceeded), "gave up waiting"},
		{redislock.ErrNotObtained, "retries exhausted"},
		{redislock.ErrLockNotHeld, "lease lost"},
		// What wallet.Spend returns when the watchdog cancelled the work.
		{fmt.Errorf("wallet: spend aborted: %w (%w)", context.Canceled, lock.ErrNotHeld), "lease lost"},
		{context.Canceled, "interrupted"},
		// What step 4 makes of a spend its watchdog cancelled, whatever the
		// refresh's error was: not an interrupt, nor a wait given up.
		{fmt.Errorf("%w: %w", ErrWatchdog, fmt.Errorf("wallet: spend aborted before the write: %w (%w)", context.Canceled, lock.ErrNotHeld)), "cancelled by the watchdog (lease lost)"},
		{fmt.Errorf("%w: wallet: read k: %w", ErrWatchdog, context.Canceled), "cancelled by the watchdog (lease lost)"},
		{fmt.Errorf("%w: %w", ErrWatchdog, fmt.Errorf("wallet: spend aborted before the write: %w (lock: refresh took longer than 666ms, a third of the TTL: %w)", context.Canceled, context.DeadlineExceeded)), "cancelled by the watchdog (lease lost)"},
		// A write sent without a reply: unknown, whatever cut it short.
		{fmt.Errorf("wallet: write k: %w: %w", wallet.ErrUnknownOutcome, context.Canceled), "unknown outcome"},
		{errors.New("READONLY You can't write against a read only replica"), "redis error"},
	}
	for _, tt := range tests {
		if got := ErrorKind(tt.err); got != tt.want {
			t.Errorf("ErrorKind(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestRun_percentile(t *testing.T) {
	var r Run
	for i := 50; i >= 1; i-- { // unsorted on purpose
		r.Obtained(0, time.Duration(i)*time.Millisecond, nil)
	}
	if got := r.Percentile(0.50); got != 25*time.Millisecond {
		t.Errorf("p50 = %v, want 25ms", got)
	}
	if got := r.Percentile(0.99); got != 50*time.Millisecond {
		t.Errorf("p99 = %v, want 50ms", got)
	}
	if got := (&Run{}).Percentile(0.5); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
}

func TestRun_obtainedCountsEveryAttempt(t *testing.T) {
	var r Run
	r.Obtained(0, time.Millisecond, nil)                      // first try
	r.Obtained(3, time.Millisecond, nil)                      // three busy, then won
	r.Obtained(2, time.Millisecond, redislock.ErrNotObtained) // gave up after two
	if r.Attempts != 1+4+2 || len(r.Waits) != 2 {
		t.Errorf("got %d attempts and %d waits, want 7 and 2", r.Attempts, len(r.Waits))
	}
}

// Every report is one line, even for an error whose message spans two
// (redislock joins errors with a newline).
func TestRun_problemIsOneLine(t *testing.T) {
	r := Run{Strategy: "jitter"}
	r.ReleaseFailed(fmt.Errorf("lock: release k: %w", errors.Join(redislock.ErrLockNotHeld, context.DeadlineExceeded)))
	want := "jitter: 1 errors (1 lease lost), first: lock: release k: redislock: lock not held context deadline exceeded"
	if got := r.Problem(); got == nil || got.Error() != want {
		t.Errorf("Problem() = %v, want %q", got, want)
	}
	if got := (&Run{}).Problem(); got != nil {
		t.Errorf("Problem() with no errors = %v, want nil", got)
	}
}

// Spends whose write got no reply are counted apart: the check line gives
// the range they allow, and a second line how many of them landed.
func TestRun_printCheckWithUnknownOutcomes(t *testing.T) {
	var out bytes.Buffer
	r := Run{Strategy: "jitter", Verdict: wallet.CheckUnknown(100, 10, 7, 2, 20)}
	r.PrintCheck(&out)
	want := "jitter:      accepted=7 unknown=2 balance=20 expected=10..30 OK\n" +
		"             1 of the 2 spends with an unknown outcome landed\n"
	if out.String() != want {
		t.Errorf("got:\n%swant:\n%s", out.String(), want)
	}
}

// The table has one row per run, and says where the command counts come
// from; a run with no accepted spend shows "-" per spend.
func TestTable(t *testing.T) {
	var out bytes.Buffer
	ok := &Run{Strategy: "jitter", Retry: "lock.Jitter{5ms, 15ms}", Verdict: wallet.Check(100, 10, 10, 0), Attempts: 300, Commands: 1000, Wall: 90 * time.Millisecond}
	none := &Run{Strategy: "lockstep", Retry: "LinearBackoff(10ms)", Commands: -1}
	Table(&out, "header.", []*Run{ok, none})
	for _, want := range []string{"header.\n" + Note + "\n",
		"jitter       lock.Jitter{5ms, 15ms}    90.0ms            30.0     0.0ms     0.0ms           100.0       0\n",
		"lockstep     LinearBackoff(10ms)        0.0ms               -     0.0ms     0.0ms               -       0\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
