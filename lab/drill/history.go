//go:build unix

package drill

// The drill's history: every spend its spender processes report becomes
// an operation (internal/history), timed in Unix nanoseconds, the clock
// every process on the machine shares. With the starting balances before
// and the balances read back after, that is a history porcupine checks
// for linearizability, beside the balance check: Result.Linearizable.

import (
	"context"
	"errors"
	"fmt"
	"io"

	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/lesson"
)

// HistoryVerdict is a run's history verdict, whose keys its JSON row gets
// (the same as every program's), with the history for WritePage.
type HistoryVerdict struct {
	history.Verdict
	rec *history.Recorder
}

// spent records a spend a spender process reported; proc is its number.
// One whose process ended between its read and its report comes with no
// read, an unknown result and the end as its return: it may have written.
func (r *runner) spent(proc int, e Event) {
	if e.Call == 0 {
		return
	}
	read := history.NoRead
	if e.Read != nil {
		read = *e.Read
	}
	result := history.Result(e.Result)
	if result == 0 {
		result = history.Failed // it gave up before it touched the wallet (wait)
	}
	r.rec.Add(history.Op{Wallet: e.Wallet, Client: proc, Call: e.Call, Return: e.End, Amount: e.Amount, Read: read, Result: result})
}

// startHistory begins the history once the wallets hold their starting
// balance.
func (r *runner) startHistory() {
	r.rec = history.NewRecorder(0)
	for i := range r.c.Wallets {
		r.rec.Set(r.c.First+int64(i), r.c.Initial)
	}
}

// CheckLine is the run's check line: the balance check over all wallets,
// then the history's verdict.
func (res Result) CheckLine() string {
	if res.Linearizable == "" {
		return res.Check
	}
	return res.Check + " linearizable=" + string(res.Linearizable)
}

// HistoryMiss names a run whose history verdict is not the one the lesson
// gives its cell (lesson.WantHistory), or returns nil. An unknown verdict
// proves nothing either way and is never a miss.
func (res Result) HistoryMiss() error {
	want, ok := lesson.WantHistory(lesson.DrillStep, lesson.DrillPhase(res.Nemesis, res.Strategy))
	if !ok || res.Linearizable == "" || res.Linearizable == history.Unsure || string(res.Linearizable) == want {
		return nil
	}
	return fmt.Errorf("%s under %s, seed %d: linearizable=%s, the lesson says %s: %s",
		res.Strategy, res.Nemesis, res.Seed, res.Linearizable, want, res.Why)
}

// WritePage writes porcupine's page of the runs' histories to w: a window
// of one wallet per run, the wallet no order explains where the verdict
// is "no", checked within history.PageLimits or until ctx ends.
func WritePage(ctx context.Context, w io.Writer, runs []Result) error {
	var sections []history.Section
	for _, res := range runs {
		if res.rec != nil {
			sections = append(sections, history.Section{Label: fmt.Sprintf("%s under %s, seed %d", res.Strategy, res.Nemesis, res.Seed), History: res.rec, Verdict: res.HistoryVerdict.Verdict})
		}
	}
	if len(sections) == 0 {
		return errors.New("drill: no run recorded a history")
	}
	return history.WritePage(ctx, w, sections, history.PageLimits)
}
