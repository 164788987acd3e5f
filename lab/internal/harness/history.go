package harness

// Every spend a step program makes through the harness is recorded, and
// each phase's record is checked for linearizability (wallet/history):
// the check line ends with the verdict,
//
//	accepted=50 balance=90 expected=-400 BROKEN linearizable=no
//
// and the phase's JSON object gets the keys step 6's rows have
// (linearizable, linearizable_why, history_ops, history_dropped,
// history_check_seconds). -history FILE.html draws the run's histories on
// porcupine's page.
//
// A history starts when the phase sets its wallet's balance (Run.Record;
// Run.Hammer and Run.Fresh call it), takes one operation per spend
// (Run.Spend wraps one: its call and return, the balance it read, told
// through wallet.ObserveReads, and its result) and ends with the balance
// the phase's check read back. A -procs copy records its own spends and
// sends them with its tally; a copy that sent none leaves holes, and the
// verdict is then unknown.

import (
	"context"
	"fmt"
	"sync/atomic"

	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// History is one phase's record of its spends of one wallet. Its methods
// are safe for concurrent use, and a nil *History records nothing.
type History struct {
	log     *history.Log
	wallet  int64
	initial int64
	setAt   int64
}

// NewHistory starts the history of wallet id, whose balance was just set
// to initial.
func NewHistory(id, initial int64) *History {
	return &History{log: history.NewLog(0), wallet: id, initial: initial, setAt: history.Now()}
}

// Spend runs one spend of amount by client (a spender's number) and
// records it: spend gets a context that tells the history the balance it
// reads. It returns what spend returned.
func (h *History) Spend(ctx context.Context, client int, amount int64, spend func(ctx context.Context) (bool, error)) (bool, error) {
	if h == nil {
		return spend(ctx)
	}
	var read atomic.Int64
	read.Store(history.NoRead)
	ctx = wallet.ObserveReads(ctx, func(b int64) { read.Store(b) })
	call := history.Now()
	ok, err := spend(ctx)
	h.Add(history.Op{Wallet: h.wallet, Client: client, Call: call, Return: history.Now(), Amount: amount, Read: read.Load(), Result: history.Outcome(ok, err)})
	return ok, err
}

// Add records an operation on the history's wallet made some other way
// (step 5's two holders): op.Wallet is set to it.
func (h *History) Add(op history.Op) {
	if h != nil {
		op.Wallet = h.wallet
		h.log.Add(op)
	}
}

// merge adds the operations a -procs copy recorded, its spenders numbered
// from first.
func (h *History) merge(ops []history.Op, first int) {
	for _, op := range ops {
		op.Client += first
		h.Add(op)
	}
}

// Check ends the history with the balance v read back and checks it.
//
// A BROKEN balance needs no search: in every order of the operations the
// balance ends at the start less one amount per accepted spend and per
// unknown one that landed, and the balance check has just found that no
// such number explains the balance read back. So the history is not
// linearizable, and porcupine, which would try every order of fifty
// spends that all read 100 before it said so, is not asked.
func (h *History) Check(v wallet.Verdict) *Linearizability {
	if h == nil || v == (wallet.Verdict{}) {
		return nil
	}
	ops := h.ops(v)
	var hv history.Verdict
	switch d := h.log.Dropped(); {
	case d > 0:
		hv = history.Verdict{Linearizable: history.Unsure, Ops: len(ops),
			Why: fmt.Sprintf("the history has holes: it kept %d spends and is missing %d (a spender process that sent none)", h.log.Len(), d)}
	case !v.OK:
		hv = history.Verdict{Linearizable: history.No, Wallet: h.wallet, Ops: len(ops),
			Why: fmt.Sprintf("wallet %d: no order of its spends leaves the balance read back (%d)", h.wallet, v.Balance)}
	default:
		hv = history.Check(ops, history.DefaultLimits)
	}
	return h.verdict(ops, hv)
}

// CheckUnless is Check, unless the run was interrupted: then it does not
// check (unknown), so that the clean-up after Ctrl-C keeps its seconds.
func (h *History) CheckUnless(v wallet.Verdict, interrupted bool) *Linearizability {
	if interrupted {
		return h.unchecked(v, notChecked)
	}
	return h.Check(v)
}

const notChecked = "interrupted by Ctrl-C: the history was not checked"

// unchecked is the verdict of a history that was not checked, and why.
func (h *History) unchecked(v wallet.Verdict, why string) *Linearizability {
	if h == nil || v == (wallet.Verdict{}) {
		return nil
	}
	ops := h.ops(v)
	return h.verdict(ops, history.Verdict{Linearizable: history.Unsure, Why: why, Ops: len(ops)})
}

// ops is the history: the spends between the Set and the read-back.
func (h *History) ops(v wallet.Verdict) []history.Op {
	end := history.Now()
	return append(h.log.Ops(),
		history.Op{Wallet: h.wallet, Call: h.setAt, Return: h.setAt, Read: h.initial, Result: history.Set},
		history.Op{Wallet: h.wallet, Call: end, Return: end, Read: v.Balance, Result: history.Read})
}

func (h *History) verdict(ops []history.Op, hv history.Verdict) *Linearizability {
	return &Linearizability{Linearizable: string(hv.Linearizable), Why: hv.Why, Ops: h.log.Len(), Dropped: h.log.Dropped(),
		CheckSeconds: hv.Took.Seconds(), ops: ops, verdict: hv}
}

// Linearizability is a phase's history verdict, with the keys its JSON
// object gets beside the balance check.
type Linearizability struct {
	Linearizable string  `json:"linearizable"` // yes, no or unknown (never a pass)
	Why          string  `json:"linearizable_why,omitempty"`
	Ops          int     `json:"history_ops"`     // spends recorded
	Dropped      int     `json:"history_dropped"` // spends missing from the record (then "unknown")
	CheckSeconds float64 `json:"history_check_seconds"`

	ops     []history.Op // for the -history page
	verdict history.Verdict
}

// suffix is what the check line ends with: " linearizable=yes".
func (l *Linearizability) suffix() string {
	if l == nil {
		return ""
	}
	return " linearizable=" + l.Linearizable
}

// CheckLine is a phase's check line: the balance check, then the history's
// verdict when the phase recorded one.
func CheckLine(v wallet.Verdict, l *Linearizability) string { return v.String() + l.suffix() }

// Record starts the history of the run's phase: wallet id was just set to
// initial. The phase loop checks it against the balance the phase's
// verdict read back.
func (r *Run) Record(id, initial int64) *History {
	h := NewHistory(id, initial)
	r.history.Store(h)
	return h
}

// Spend records one spend in the phase's history (History.Spend); without
// one it only runs spend.
func (r *Run) Spend(ctx context.Context, client int, amount int64, spend func(ctx context.Context) (bool, error)) (bool, error) {
	return r.History().Spend(ctx, client, amount, spend)
}

// History is the phase's history (nil before Record).
func (r *Run) History() *History { return r.history.Load() }

// checked fills o.History from the phase's history, unless the phase did,
// and forgets the history. After Ctrl-C it does not check: the clean-up
// has a few seconds, and the phase is not judged.
func (r *Run) checked(o *Outcome) {
	if h := r.history.Swap(nil); o.History == nil {
		o.History = h.CheckUnless(o.Verdict, r.Interrupted())
	}
}

// historyMiss names a phase whose history verdict is not the one the
// lesson table gives it (lesson.WantHistory), or returns "". An unknown
// verdict proves nothing either way and is never a miss.
func historyMiss(p PhaseResult) string {
	want, ok := lesson.WantHistory(p.Step, p.Phase)
	if !ok || p.History == nil || p.History.Linearizable == string(history.Unsure) || p.History.Linearizable == want {
		return ""
	}
	why := ""
	if p.History.Why != "" {
		why = ": " + p.History.Why
	}
	return fmt.Sprintf("linearizable=%s, the lesson says %s%s", p.History.Linearizable, want, why)
}

// WithHistory adds -history FILE.html: write the run's histories as
// porcupine's page. New adds it to every step program.
func (p *Program) withHistory() {
	p.historyFile = p.Flags.String("history", "", "also write each phase's history of spends as porcupine's HTML page to this file")
}

// Keep adds a phase's checked history to the -history page.
func (p *Program) Keep(phase string, l *Linearizability) {
	if l != nil && p.historyFile != nil && *p.historyFile != "" {
		p.sections = append(p.sections, history.Section{Label: p.Step + " " + phase, Ops: l.ops, Verdict: l.verdict})
	}
}

// Finish writes the -history page, if asked for, and ends the report
// (Report.Finish): a page that could not be written makes it exit 1.
func (p *Program) Finish(r *Report) int {
	if p.historyFile != nil && *p.historyFile != "" && len(p.sections) > 0 {
		if err := history.WritePage(*p.historyFile, p.sections); err != nil {
			r.Fail(p.Stderr, fmt.Errorf("-history: %w", err))
		}
	}
	return r.Finish(p.Stdout, p.Stderr, p.JSON())
}
