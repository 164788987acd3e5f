//go:build unix

package drill

// The drill's history: every spend its spender processes report becomes
// an operation (wallet/history), timed by the spender's clock in Unix
// nanoseconds, the clock every process on the machine shares. A spender
// reports when it called (Event.Call, before it took the lock), the
// balance it read (Event.Read) and its result (Event.Result); a spend
// whose process died between its read and its report is an unknown
// outcome whose return is open. With the wallets' starting balances set
// before the spenders start and the balances read back after they stop,
// that is a history porcupine checks for linearizability, beside the
// balance check: Result.Linearizable.

import (
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/wallet/history"
)

// HistoryVerdict is a run's history verdict, with the keys its JSON row
// gets (the same as every step's).
type HistoryVerdict struct {
	Linearizable        string  `json:"linearizable"` // yes, no or unknown (never a pass)
	LinearizableWhy     string  `json:"linearizable_why,omitempty"`
	HistoryOps          int     `json:"history_ops"`
	HistoryDropped      int     `json:"history_dropped"`
	HistoryCheckSeconds float64 `json:"history_check_seconds"`

	ops     []history.Op // for WritePage
	verdict history.Verdict
}

// drillHistory is what a run records.
type drillHistory struct {
	log   *history.Log
	setAt int64
}

// spent records a spend a spender process reported; proc is its number.
func (h *drillHistory) spent(proc int, e Event) {
	if h.log == nil || e.Call == 0 {
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
	h.log.Add(history.Op{Wallet: e.Wallet, Client: proc, Call: e.Call, Return: e.End, Amount: e.Amount, Read: read, Result: result})
}

// lost records a spend whose process ended after its read and before its
// report: it may have written.
func (h *drillHistory) lost(proc int, e Event, at int64) {
	if h.log == nil || e.Call == 0 {
		return
	}
	h.log.Add(history.Op{Wallet: e.Wallet, Client: proc, Call: e.Call, Return: at, Amount: e.Amount, Read: history.NoRead, Result: history.Unknown})
}

// start begins the history once the wallets hold their starting balance.
func (r *runner) startHistory() {
	r.hist = drillHistory{log: history.NewLog(0), setAt: time.Now().UnixNano()}
}

// checkHistory ends the history with the balances read back and checks it.
func (r *runner) checkHistory(res *Result, balances []int64) {
	if r.hist.log == nil {
		return
	}
	ops := r.hist.log.Ops()
	res.HistoryOps, res.HistoryDropped = len(ops), r.hist.log.Dropped()
	readAt := time.Now().UnixNano()
	for i, bal := range balances {
		id := r.c.First + int64(i)
		ops = append(ops,
			history.Op{Wallet: id, Call: r.hist.setAt, Return: r.hist.setAt, Read: r.c.Initial, Result: history.Set},
			history.Op{Wallet: id, Call: readAt, Return: readAt, Read: bal, Result: history.Read})
	}
	v := history.Check(ops, history.DefaultLimits)
	if res.HistoryDropped > 0 {
		v = history.Verdict{Linearizable: history.Unsure, Why: fmt.Sprintf("the log was full: it dropped %d spends", res.HistoryDropped)}
	}
	res.Linearizable, res.LinearizableWhy, res.HistoryCheckSeconds = string(v.Linearizable), v.Why, v.Took.Seconds()
	res.ops, res.verdict = ops, v
}

// CheckLine is the run's check line: the balance check over all wallets,
// then the history's verdict.
func (res Result) CheckLine() string {
	if res.Linearizable == "" {
		return res.Check
	}
	return res.Check + " linearizable=" + res.Linearizable
}

// HistoryMiss names a run whose history verdict is not the one the lesson
// gives its cell (lesson.WantHistory), or returns nil. An unknown verdict
// proves nothing either way and is never a miss.
func (res Result) HistoryMiss() error {
	want, ok := lesson.WantHistory(lesson.DrillStep, lesson.DrillPhase(res.Nemesis, res.Strategy))
	if !ok || res.Linearizable == "" || res.Linearizable == string(history.Unsure) || res.Linearizable == want {
		return nil
	}
	return fmt.Errorf("%s under %s, seed %d: linearizable=%s, the lesson says %s: %s",
		res.Strategy, res.Nemesis, res.Seed, res.Linearizable, want, res.LinearizableWhy)
}

// WritePage writes porcupine's page of the runs' histories: a window of
// one wallet per run, the wallet no order explains where the verdict is
// "no".
func WritePage(path string, runs []Result) error {
	var sections []history.Section
	for _, res := range runs {
		if res.ops != nil {
			sections = append(sections, history.Section{Label: fmt.Sprintf("%s under %s, seed %d", res.Strategy, res.Nemesis, res.Seed), Ops: res.ops, Verdict: res.verdict})
		}
	}
	if len(sections) == 0 {
		return errors.New("drill: no run recorded a history")
	}
	return history.WritePage(path, sections)
}
