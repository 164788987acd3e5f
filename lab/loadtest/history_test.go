package loadtest_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/loadtest"
)

// hotWallet is issue 35's run: none and lock, 64 workers on one wallet for
// 2 s, with -history. Its page took 4.8 GB in 10 minutes and did not end.
func hotWallet(t *testing.T) (loadtest.Config, *loadtest.Env) {
	t.Helper()
	c, env := setup(t, "none", "lock")
	c.Wallets, c.Workers, c.Duration = 1, 64, 2*time.Second
	c.History = loadtest.HistoryPage
	return c, env
}

// writePage writes the run's history page, and fails the test when it
// has not returned within a minute past its budget: an unbounded check
// would never return. It is not a speed test.
func writePage(t *testing.T, ctx context.Context, rep *loadtest.Report) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "h.html")
	done := make(chan error, 1)
	go func() {
		done <- harness.SavePage(path, func(w io.Writer) error { return history.WritePage(ctx, w, rep.Histories(), history.PageLimits) })
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(history.PageLimits.Timeout + time.Minute):
		t.Fatalf("still writing the history page %v later: it is not bounded", history.PageLimits.Timeout+time.Minute)
	}
	return labtest.HistoryPageSays(t, path)
}

// Each row's history is checked within its bounds, and the page draws a
// window of each within its own, saying what it found for each window:
// none's lost updates make it no, and lock is never no.
func TestRun_historyPageOfAHotWalletIsBounded(t *testing.T) {
	c, env := hotWallet(t)
	rep := run(t, context.Background(), env, c)
	assertCleanedUp(t, env, c)
	for _, r := range rep.Rows {
		t.Logf("%s: %s linearizable=%s (%s), checked in %.2fs", r.Strategy, r.Check, r.Linearizable, r.LinearizableWhy, r.HistoryCheckSeconds)
		switch {
		case r.Strategy == "none" && !r.OK && r.Linearizable != string(history.No):
			t.Errorf("none: %s, linearizable=%s (%s); want no: the balance alone shows it", r.Check, r.Linearizable, r.LinearizableWhy)
		case r.Strategy == "lock" && r.Linearizable == string(history.No):
			t.Errorf("lock: linearizable=no (%s), the lesson says yes", r.LinearizableWhy)
		case r.Linearizable == string(history.Unsure) && !strings.Contains(r.LinearizableWhy, "budget after ordering"):
			t.Errorf("%s: unknown without saying why: %q", r.Strategy, r.LinearizableWhy)
		}
	}
	says := writePage(t, context.Background(), rep)
	if len(says) != 2 {
		t.Fatalf("the page says %q, want what it found for each of the 2 rows' windows", says)
	}
	t.Logf("the page: %q", says)
}

// Ctrl-C while the page is being checked: the page is written at once,
// each window unknown and why, never checked for minutes.
func TestRun_historyPageAfterCtrlCIsWrittenAtOnce(t *testing.T) {
	c, env := hotWallet(t)
	rep := run(t, context.Background(), env, c)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(context.Canceled)
	for _, s := range writePage(t, ctx, rep) {
		if !strings.HasPrefix(s, "this window: linearizable=unknown: the check was stopped") {
			t.Errorf("after Ctrl-C the page says %q, want unknown: stopped", s)
		}
	}
}
