package history_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// hang is how long a check or a page may run past its own time budget
// before a test calls it a hang: a busy machine's slack, not a speed
// test. Without bounds, the histories below took minutes and gigabytes.
const hang = 60 * time.Second

// within runs f and fails the test when it has not returned within
// budget+hang: an unbounded search would never return.
func within[T any](t *testing.T, budget time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(budget + hang):
		t.Fatalf("still checking %v after its budget of %v: the check is not bounded", budget+hang, budget)
		panic("unreachable")
	}
}

// race records n spends of amount from one wallet that all start at
// once, as step 1's goroutines do, against the test's Redis: most read the
// same balance, and most of their updates are lost.
func race(t *testing.T, n int, initial, amount int64) (*history.Recorder, wallet.Verdict) {
	t.Helper()
	rdb := testenv.Redis(t)
	key := ledger.BalanceKey(labtest.Prefix(t, rdb), 1)
	ctx := labtest.Context(t, time.Minute)
	if err := rdb.Set(ctx, key, initial, 0).Err(); err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(0)
	rec.Set(1, initial)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted, unknown := 0, 0
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := rec.Spend(ctx, 1, i, amount, func(ctx context.Context) (bool, error) {
				return wallet.Spend(ctx, ledger.Observed(ctx, rdb), key, amount, 5*time.Millisecond)
			})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case ok:
				accepted++
			case errors.Is(err, wallet.ErrUnknownOutcome):
				unknown++
			}
		})
	}
	close(start)
	wg.Wait()
	bal, err := rdb.Get(ctx, key).Int64()
	if err != nil {
		t.Fatal(err)
	}
	rec.Read(1, bal)
	return rec, wallet.Check(initial, amount, wallet.Tally{Accepted: accepted, Unknown: unknown}, bal)
}

// TestRecorder_twoHundredOverlappingSpendsAreJudgedAndDrawnWithinBounds is
// step1-race -n 200 -history: two hundred spends of 10 from a balance of
// 100, all at once. The history is not linearizable, which the balance
// alone shows; the page must find its window and draw it within its
// bounds (it took 13 minutes and 10 GB before), saying for the window
// what its own check found, or that the check ran out, and why.
func TestRecorder_twoHundredOverlappingSpendsAreJudgedAndDrawnWithinBounds(t *testing.T) {
	rec, balance := race(t, 200, 100, 10)
	if balance.OK {
		t.Skipf("the race lost no update this time (%s): nothing to judge", balance)
	}
	v := within(t, history.DefaultLimits.Timeout, func() history.Verdict { return rec.Check(t.Context(), history.DefaultLimits) })
	if v.Linearizable != history.No || v.Ops != 200 || !strings.Contains(v.Why, "leaves the balance read back") {
		t.Errorf("got %+v, want no, from the balance read back, over 200 spends", v)
	}
	var page strings.Builder
	err := within(t, history.PageLimits.Timeout, func() error {
		return history.WritePage(t.Context(), &page, []history.Section{{Label: "race", History: rec, Verdict: v}}, history.PageLimits)
	})
	if err != nil {
		t.Fatal(err)
	}
	got := page.String()
	if !strings.Contains(got, "the whole history: linearizable=no") || !strings.Contains(got, "this window: linearizable=") {
		t.Errorf("the page does not say what was found of the whole history and of its window")
	}
	if i := strings.Index(got, "this window: linearizable=unknown"); i >= 0 && !strings.Contains(got[i:], "budget after ordering") {
		t.Errorf("the page says the window is unknown without saying why")
	}
	t.Logf("%s; the window: %s", v.Why, windowSays(got))
}

// windowSays is what the page says of its (first) window, in the row
// under the workers.
func windowSays(page string) string {
	i := strings.Index(page, `"Description":"this window: `)
	if i < 0 {
		return "nothing"
	}
	s := page[i+len(`"Description":"`):]
	if j := strings.IndexByte(s, '"'); j >= 0 {
		s = s[:j]
	}
	return s
}

// unknowns is the worst history for the search: a window cut from the
// middle of a hot wallet's history, where n spends in flight at its edge
// are unknown outcomes with no read known, every one of which may have
// landed or not, in any order. No read pins the balance, no arithmetic
// decides it, and porcupine keeps every subset of them it tries.
func unknowns(n int) []history.Op {
	ops := []history.Op{{Wallet: 1, Call: 0, Return: 1, Read: 1_000_000, Result: history.Set}}
	for i := range n {
		ops = append(ops, history.Op{Wallet: 1, Client: i, Call: int64(10 + i), Return: int64(10_000 + i), Amount: 10, Read: history.NoRead, Result: history.Unknown})
	}
	// One spend that read a balance no subset of them leaves: the search
	// must try them all before it can say no.
	return append(ops, history.Op{Wallet: 1, Client: n, Call: 20_000, Return: 20_001, Amount: 10, Read: 3, Result: history.Accepted})
}

// TestCheck_stopsAtItsMemoryBudget: with time to spare, the search of the
// worst history stops once it would hold more than its memory budget,
// and says so: unknown, never yes.
func TestCheck_stopsAtItsMemoryBudget(t *testing.T) {
	lim := history.Limits{Timeout: time.Hour, Memory: 16 << 20}
	v := within(t, 0, func() history.Verdict { return history.Check(t.Context(), unknowns(200), lim) })
	if v.Linearizable != history.Unsure || !strings.Contains(v.Why, "ran out of its 16 MiB memory budget after ordering") || !strings.Contains(v.Why, "of 202 operations") {
		t.Errorf("got %s (%s), want unknown: out of its 16 MiB", v, v.Why)
	}
}

// TestCheck_stopsAtItsTimeBudget: with memory to spare, it stops at its
// deadline, and says so.
func TestCheck_stopsAtItsTimeBudget(t *testing.T) {
	lim := history.Limits{Timeout: 300 * time.Millisecond, Memory: 1 << 40}
	v := within(t, lim.Timeout, func() history.Verdict { return history.Check(t.Context(), unknowns(200), lim) })
	if v.Linearizable != history.Unsure || !strings.Contains(v.Why, "ran out of its 300ms budget after ordering") {
		t.Errorf("got %s (%s), want unknown: out of its 300ms", v, v.Why)
	}
}

// TestCheck_stopsWhenItsContextEnds: Ctrl-C in the middle of a check ends
// it at once, with neither bound near.
func TestCheck_stopsWhenItsContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancelCause(t.Context())
	time.AfterFunc(100*time.Millisecond, func() { cancel(errors.New("SIGTERM")) })
	lim := history.Limits{Timeout: time.Hour, Memory: 1 << 40}
	v := within(t, 0, func() history.Verdict { return history.Check(ctx, unknowns(200), lim) })
	if v.Linearizable != history.Unsure || !strings.Contains(v.Why, "the check was stopped (SIGTERM) after ordering") {
		t.Errorf("got %s (%s), want unknown: stopped by SIGTERM", v, v.Why)
	}
}

// TestWritePage_saysUnknownForAWindowItCouldNotCheck: the page of the
// worst history is written within its bounds, and says in words that its
// window is unknown, and why.
func TestWritePage_saysUnknownForAWindowItCouldNotCheck(t *testing.T) {
	rec := history.NewRecorder(0)
	for _, op := range unknowns(150) {
		rec.Add(op)
	}
	v := history.Verdict{Linearizable: history.Unsure, Why: "not checked"}
	lim := history.Limits{Timeout: 2 * time.Second, Memory: 16 << 20}
	var page strings.Builder
	err := within(t, lim.Timeout, func() error {
		return history.WritePage(t.Context(), &page, []history.Section{{Label: "hot", History: rec, Verdict: v}}, lim)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := windowSays(page.String()); !strings.Contains(got, "this window: linearizable=unknown: the check ran out of its") {
		t.Errorf("the page says %q of the window, want unknown and why", got)
	}
}

// TestWritePage_afterCtrlCDrawsWhatItHasAsUnknown: a page written after
// Ctrl-C is written at once, its windows unknown, and says it was stopped.
func TestWritePage_afterCtrlCDrawsWhatItHasAsUnknown(t *testing.T) {
	rec := history.NewRecorder(0)
	for _, op := range unknowns(150) {
		rec.Add(op)
	}
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("Ctrl-C"))
	var page strings.Builder
	lim := history.Limits{Timeout: time.Hour, Memory: 1 << 40}
	err := within(t, 0, func() error {
		return history.WritePage(ctx, &page, []history.Section{{Label: "hot", History: rec}}, lim)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := windowSays(page.String()); !strings.Contains(got, "this window: linearizable=unknown: the check was stopped (Ctrl-C)") {
		t.Errorf("the page says %q of the window, want unknown, stopped by Ctrl-C", got)
	}
}
