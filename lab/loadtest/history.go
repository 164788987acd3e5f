package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/lesson"
)

// Every spend of a phase is recorded (internal/history): its call and
// return, the balance it read (seeReads) and its result. With the starting
// balances before and the read-back after, that is a history porcupine
// checks for linearizability: the row's "linearizable", beside the balance
// check's OK or BROKEN.

// HistoryMode says what a run does with its histories (Config.History).
type HistoryMode int

const (
	HistoryCheck HistoryMode = iota // record and check every phase's history
	HistoryPage                     // also keep them for a page (Report.Histories)
	HistoryOff                      // record nothing, to measure what recording costs
)

// historyLimits bound each phase's check (a default phase makes some
// 90,000 spends); a check they cut short is "unknown", never "yes".
var historyLimits = history.DefaultLimits

// seeReads returns ctx, told the balance a spend reads
// (ledger.ObserveReads), and where it lands; nil when the run records
// nothing.
func (r *runner) seeReads(ctx context.Context) (context.Context, *atomic.Int64) {
	if r.cfg.History == HistoryOff {
		return ctx, nil
	}
	read := new(atomic.Int64)
	read.Store(history.NoRead)
	return ledger.ObserveReads(ctx, func(b int64) { read.Store(b) }), read
}

// record adds one spend to the phase's history.
func (t *tally) record(id int64, worker int, o outcome, start time.Time, took time.Duration) {
	if t.rec == nil || o.abandoned {
		return // a wait cut short did nothing: not an operation
	}
	call := history.At(start)
	t.rec.Add(history.Op{Wallet: id, Client: worker, Call: call, Return: call + int64(took),
		Amount: t.amount, Read: o.read, Result: history.Outcome(o.ok, o.err)})
}

// startHistory starts the phase's history: every wallet was just set to
// cfg.Initial.
func (r *runner) startHistory(t *tally) {
	if r.cfg.History == HistoryOff {
		return
	}
	t.rec, t.amount = history.NewRecorder(history.DefaultCap), r.cfg.Amount
	for i := range r.cfg.Wallets {
		t.rec.Set(r.w.id(i), r.cfg.Initial)
	}
}

// Histories are the run's histories, a section of a page each
// (harness.WriteHistoryPage); Config.History must be HistoryPage.
func (rep *Report) Histories() []history.Section { return rep.histories }

// HistoryErr names every row whose history the lesson says must be
// linearizable and is not (a check that did not finish is not one of
// them). nil when there is none.
func (rep *Report) HistoryErr() error {
	var errs []error
	for _, row := range rep.Rows {
		want, ok := lesson.WantHistory("loadtest", row.Strategy)
		if !ok || row.Interrupted || row.Linearizable != string(history.No) || want != lesson.Linearizable {
			continue
		}
		errs = append(errs, fmt.Errorf("%s: linearizable=no, the lesson says yes: %s", rep.label(row), row.LinearizableWhy))
	}
	return errors.Join(errs...)
}
