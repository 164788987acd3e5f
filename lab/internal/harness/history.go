package harness

// Every spend a step program makes through the harness is recorded in the
// phase's history (wallet/history's Recorder), and each phase's record is
// checked for linearizability: the check line ends with the verdict,
//
//	accepted=50 balance=90 expected=-400 BROKEN linearizable=no
//
// and the phase's JSON object gets the keys every row with a history has
// (history.Verdict: linearizable, linearizable_why, history_ops,
// history_dropped, history_check_seconds). -history FILE.html draws the
// run's histories on porcupine's page.
//
// A history starts when the phase sets its wallet's balance (Run.Record;
// Run.Hammer and Run.Reset call it), takes one operation per spend
// (Run.Spend, through Recorder.Spend) and ends with the balance the
// phase's check read back. A -procs copy records its own spends and sends
// them with its tally; a copy that sent none leaves holes, and the verdict
// is then unknown. The check is bounded (history.DefaultLimits) and stops
// at Ctrl-C, its verdict then unknown.

import (
	"context"
	"fmt"
	"io"

	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// recording is the phase's history and the wallet it records.
type recording struct {
	rec *history.Recorder
	id  int64
}

// Linearizability is a phase's history verdict, whose keys its JSON object
// gets beside the balance check, with the history for the -history page.
type Linearizability struct {
	history.Verdict
	rec *history.Recorder
}

// CheckHistory ends rec, the history of wallet id, with the balance v read
// back, and checks it within history.DefaultLimits, or until ctx ends
// (Ctrl-C): then its verdict is unknown, and says so. nil without a
// history or a balance read back.
func CheckHistory(ctx context.Context, rec *history.Recorder, id int64, v wallet.Verdict) *Linearizability {
	if rec == nil || v == (wallet.Verdict{}) {
		return nil
	}
	rec.Read(id, v.Balance)
	return &Linearizability{Verdict: rec.Check(ctx, history.DefaultLimits), rec: rec}
}

// suffix is what the check line ends with: " linearizable=yes".
func (l *Linearizability) suffix() string {
	if l == nil {
		return ""
	}
	return " linearizable=" + string(l.Linearizable)
}

// CheckLine is a phase's check line: the balance check, then the history's
// verdict when the phase recorded one.
func CheckLine(v wallet.Verdict, l *Linearizability) string { return v.String() + l.suffix() }

// Record starts the history of the run's phase: wallet id was just set to
// initial. The phase loop checks it against the balance the phase's
// verdict read back.
func (r *Run) Record(id, initial int64) *history.Recorder {
	rec := history.NewRecorder(0)
	rec.Set(id, initial)
	r.history.Store(&recording{rec: rec, id: id})
	return rec
}

// Spend records one spend by client in the phase's history
// (Recorder.Spend); without one it only runs spend.
func (r *Run) Spend(ctx context.Context, client int, amount int64, spend func(ctx context.Context) (bool, error)) (bool, error) {
	if h := r.history.Load(); h != nil {
		return h.rec.Spend(ctx, h.id, client, amount, spend)
	}
	return spend(ctx)
}

// History is the phase's history (nil before Record).
func (r *Run) History() *history.Recorder {
	if h := r.history.Load(); h != nil {
		return h.rec
	}
	return nil
}

// checked fills o.History from the phase's history, unless the phase did,
// and forgets the history. The check stops when ctx ends (Ctrl-C): the
// clean-up has a few seconds, and the phase is not judged.
func (r *Run) checked(ctx context.Context, o *Outcome) {
	if h := r.history.Swap(nil); h != nil && o.History == nil {
		o.History = CheckHistory(ctx, h.rec, h.id, o.Verdict)
	}
}

// historyMiss names a phase whose history verdict is not the one the
// lesson table gives it (lesson.WantHistory), or returns "". An unknown
// verdict proves nothing either way and is never a miss.
func historyMiss(p PhaseResult) string {
	want, ok := lesson.WantHistory(p.Step, p.Phase)
	if !ok || p.History == nil || p.History.Linearizable == history.Unsure || string(p.History.Linearizable) == want {
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
		p.sections = append(p.sections, history.Section{Label: p.Step + " " + phase, History: l.rec, Verdict: l.Verdict})
	}
}

// Finish writes the -history page, if asked for (WriteHistoryPage), and
// ends the report (Report.Finish).
func (p *Program) Finish(ctx context.Context, r *Report) int {
	if p.historyFile != nil && *p.historyFile != "" && len(p.sections) > 0 {
		WriteHistoryPage(ctx, r, p.Stderr, *p.historyFile, p.sections)
	}
	return r.Finish(p.Stdout, p.Stderr, p.JSON())
}

// WriteHistoryPage writes the -history page at path: a window of each of
// sections (history.WritePage), checked within history.PageLimits or
// until ctx ends. A page that could not be written fails r (exit 1). A
// signal while it was checked is said in one line on stderr and makes r
// exit 130; the windows it left unchecked are drawn as unknown.
func WriteHistoryPage(ctx context.Context, r *Report, stderr io.Writer, path string, sections []history.Section) {
	before := ctx.Err()
	err := SavePage(path, func(w io.Writer) error { return history.WritePage(ctx, w, sections, history.PageLimits) })
	if err != nil {
		r.Fail(stderr, fmt.Errorf("-history: %w", err))
	}
	if before == nil && ctx.Err() != nil {
		fmt.Fprintf(stderr, "%s: interrupted by %s while checking the -history page: it draws the windows left unchecked as unknown\n", r.step, Why(ctx))
		r.Interrupt()
	}
}
