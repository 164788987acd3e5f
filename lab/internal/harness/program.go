package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// Program is what a step program declares before its lesson runs: its
// name, its flag set with the flags every program has (-prefix, -json,
// and -procs where the program has spenders to share out), and where it
// prints. A step adds its own flags to Flags, then calls Parse.
type Program struct {
	Step   string
	Flags  *flag.FlagSet
	Stdout io.Writer
	Stderr io.Writer

	prefix        *string
	defaultPrefix string
	walletID      *int64 // -wallet-id, for a row program (WithWallet)
	json          *bool
	procs         *int
	historyFile   *string           // -history (history.go)
	sections      []history.Section // the histories it draws
	args          []string
}

// New starts a program's flags: -prefix, whose default is prefix, and
// -json.
func New(step, prefix string, stdout, stderr io.Writer) *Program {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	p := &Program{Step: step, Flags: fs, Stdout: stdout, Stderr: stderr, defaultPrefix: prefix}
	p.prefix = fs.String("prefix", prefix, "prefix of the Redis keys this run writes")
	p.json = fs.Bool("json", false, "print the result as one JSON object instead of the text")
	p.withHistory()
	return p
}

// WithProcs adds -procs: run the spenders in that many processes, copies
// of the program (procs.go).
func (p *Program) WithProcs() *Program {
	p.procs = p.Flags.Int("procs", 1, fmt.Sprintf("run the spenders in this many processes, copies of this program (at most %d and -n); 1: goroutines of this one", MaxProcs))
	return p
}

// Prefix is -prefix; JSON is -json; Procs is -procs, 1 without it.
func (p *Program) Prefix() string { return *p.prefix }
func (p *Program) JSON() bool     { return *p.json }
func (p *Program) Procs() int {
	if p.procs == nil {
		return 1
	}
	return *p.procs
}

// Parse parses args, then checks them: the prefix, -procs against n (the
// spenders, 0 for a program without -procs) and the step's own checks,
// which it calls after parsing (nil errors pass). It returns (0, true) when
// the program should go on; otherwise it has told the user, and returns
// the exit code (0 after -h, 2 for a bad flag), as Parse and Refuse do.
func (p *Program) Parse(args []string, n func() int, checks func() []error) (code int, ok bool) {
	p.args = args
	if code, stop := Parse(p.Flags, args, p.Stdout, p.Stderr); stop {
		return code, false
	}
	errs := []error{CheckPrefix(*p.prefix)}
	if *p.historyFile != "" {
		errs = append(errs, CheckPageOf("-history", *p.historyFile))
	}
	if checks != nil {
		errs = append(errs, checks()...)
	}
	if p.procs != nil {
		errs = append(errs, CheckProcs(*p.procs, n()))
	}
	if code, stop := Refuse(p.Flags, p.Stderr, errs...); stop {
		return code, false
	}
	return 0, true
}

// Fail prints "step: err" on stderr, in one line, and returns 1.
func (p *Program) Fail(err error) int {
	fmt.Fprintln(p.Stderr, p.Step+":", OneLine(err))
	return 1
}

// Run is one run of a lesson: the Redis client, the prefix its keys live
// under, and the report it adds its figures to. Its methods run a spender
// program's spenders (steps 1 and 2); a lesson on a wallet row in
// PostgreSQL (step 5) gets a fencing.Run, which adds the row.
type Run struct {
	Redis  redis.UniversalClient // nil when a row program's phases need no Redis
	Prefix string
	Report *Report
	N      int    // the spenders
	Also   Errors // errors beside the spends' own (step 2's failed releases), from every copy

	OneRow bool // a row program's (internal/fencing): each phase's whole outcome is its -json "figures", and phases print apart

	p            *Program
	session      *Session        // nil for a row program without Redis
	parent, work context.Context // the run's (it ends at Ctrl-C), and the work's (also when the run lease is lost)
	child        bool
	served       int                       // a copy's exit code, once it has served
	history      atomic.Pointer[recording] // the phase's record of its spends (history.go); spenders cut short may still add to it
}

// errServed ends a -procs copy's lesson once it has spent: the parent
// does the rest.
var errServed = errors.New("harness: a -procs copy has served its spends")

// Hammer is the heart of a spender lesson: it sets key to initial (after
// deleting the run's other keys, a lease an interrupted run may have
// left), lets the N spenders at it at once, each calling spend, as
// goroutines or -procs copies, and reads the balance back, even after
// Ctrl-C, to check it against the spends accepted, each of amount, and
// those whose outcome is unknown (wallet.CheckUnknown).
//
// In a -procs copy it only spends, and returns an error that ends the
// lesson there. After Ctrl-C it waits for the spenders only until the
// clean-up deadline; an error then says what was not measured.
func (r *Run) Hammer(ctx context.Context, key string, initial, amount int64, others []string, spend func(ctx context.Context) (bool, error)) (wallet.Tally, wallet.Verdict, error) {
	if r.child {
		r.Record(wallet.DemoWallet, initial)
		r.served = r.spenders(amount, spend).serve(ctx, os.Stdin, r.p.Stdout, r.p.Stderr, os.Getenv(procsEnv))
		return wallet.Tally{}, wallet.Verdict{}, errServed
	}
	if err := r.Reset(ctx, key, initial, others...); err != nil {
		if ctx.Err() != nil {
			err = errNotStarted
		}
		return wallet.Tally{}, wallet.Verdict{}, err
	}
	tally, ok := Await(r.session, func() wallet.Tally { return r.spenders(amount, spend).run(ctx) })
	if !ok { // Ctrl-C, and Redis did not answer the spenders in time
		return tally, wallet.Verdict{}, errNoAnswer
	}
	v, err := r.Check(key, initial, amount, tally.Accepted, tally.Unknown)
	if err != nil {
		return tally, v, fmt.Errorf("its balance could not be read back (%w)", err)
	}
	return tally, v, nil
}

// Reset deletes others (a lock key an earlier phase or run left behind)
// and sets the balance at key: each phase or run starts from the same
// state, so a phase run alone tells the same story.
func (r *Run) Reset(ctx context.Context, key string, balance int64, others ...string) error {
	if len(others) > 0 {
		if err := r.Redis.Del(ctx, others...).Err(); err != nil {
			return fmt.Errorf("free %s: %w", strings.Join(others, ", "), err)
		}
	}
	err := wallet.Set(ctx, r.Redis, key, balance)
	r.Record(wallet.DemoWallet, balance) // the phase's history starts here (Run.Spend), one wallet whatever its key
	return err
}

// Check reads the balance at key back, even after Ctrl-C (Cleanup), and
// checks it against the spends of amount accepted from initial and those
// whose outcome is unknown (wallet.CheckUnknown).
func (r *Run) Check(key string, initial, amount int64, accepted, unknown int) (wallet.Verdict, error) {
	ctx, cancel := r.Cleanup()
	defer cancel()
	balance, err := wallet.Balance(ctx, r.Redis, key)
	if err != nil {
		return wallet.Verdict{}, err
	}
	return wallet.CheckUnknown(initial, amount, accepted, unknown, balance), nil
}

// spenders is the run's N spenders, each calling spend to take amount, in
// -procs processes, each spend recorded in the run's history.
func (r *Run) spenders(amount int64, spend func(context.Context) (bool, error)) spenders {
	return spenders{N: r.N, Procs: r.p.Procs(), Args: r.p.args, Stderr: r.p.Stderr, Also: &r.Also, History: r.History(),
		Spend: func(ctx context.Context, i int) (bool, error) { return r.Spend(ctx, i, amount, spend) }}
}

var (
	errNoAnswer   = errors.New("its spenders got no answer from Redis in time")
	errNotStarted = errors.New("the run had not started")
)

// Cleanup is the context for what follows the work, as Hammer reads the
// balance: Ctrl-C does not end it (Session.Cleanup).
func (r *Run) Cleanup() (context.Context, context.CancelFunc) {
	if r.session == nil {
		return Cleanup(r.parent)
	}
	return r.session.Cleanup()
}

// Interrupted reports whether Ctrl-C came.
func (r *Run) Interrupted() bool {
	if r.session == nil {
		return r.parent.Err() != nil
	}
	return r.session.Interrupted()
}

// Spenders runs a spender program: it connects to Redis, and in a -procs
// copy runs lesson only to spend (Hammer). Otherwise it takes the run
// lease on the prefix, so that a second run on it is refused instead of
// mixed in, and runs lesson once with n spenders, or -runs times for a
// program that has that flag (runs > 0): it prints each check line, adds
// each run to the report as phase, and ends with the report's exit code.
// keys are the run's keys: Close deletes them, and names those it could
// not.
//
// lesson returns what it found, and an error that stops the run: with a
// verdict, the verdict is printed first.
func (p *Program) Spenders(ctx context.Context, n, runs int, phase string, keys []string, lesson func(ctx context.Context, r *Run) (Outcome, error)) int {
	rdb, err := services.Connect(ctx)
	if err != nil {
		return p.Fail(err)
	}
	defer rdb.Close()
	r := &Run{Redis: rdb, Prefix: p.Prefix(), Report: NewReport(p.Step), N: n, p: p, child: p.procs != nil && Child()}
	if r.child { // one of the -procs copies: it spends, the parent does the rest
		if _, err := lesson(ctx, r); err != errServed {
			return p.Fail(err)
		}
		return r.served
	}
	s, err := Start(ctx, rdb, p.Step, p.Prefix())
	if err != nil {
		return p.Fail(err)
	}
	defer s.Close(p.Stderr, keys...)
	r.session, ctx = s, s.Context() // ends at Ctrl-C
	r.Report.Set("procs", p.Procs())
	repeat := max(runs, 1)
	var partial error // what Ctrl-C did to the run it cut short, if any
	for range repeat {
		if ctx.Err() != nil {
			break // Ctrl-C, or the run lease was lost: see below
		}
		o, err := lesson(ctx, r)
		r.checked(ctx, &o)
		if o.Verdict == (wallet.Verdict{}) && err != nil { // nothing measured
			if s.Interrupted() || ctx.Err() != nil {
				if err != errNotStarted {
					partial = err
				}
				break
			}
			return p.Fail(err)
		}
		if !p.JSON() {
			fmt.Fprintln(p.Stdout, CheckLine(o.Verdict, o.History))
			for _, line := range o.Lines {
				fmt.Fprintln(p.Stdout, line)
			}
		}
		if s.Interrupted() {
			r.Report.InterruptedChecked(phase, o.Verdict, o.History, o.Figures) // measured, but not what the lesson is about
			partial = errCut
			break
		}
		r.Report.AddChecked(phase, o.Verdict, o.History, o.Figures)
		p.Keep(phase, o.History)
		if err != nil {
			return p.Fail(err)
		}
		for _, w := range o.Warnings {
			fmt.Fprintln(p.Stderr, p.Step+":", w)
		}
		for _, problem := range o.Problems {
			r.Report.Fail(p.Stderr, errors.New(problem))
		}
	}
	switch {
	case ctx.Err() != nil && !s.Interrupted():
		return p.Fail(context.Cause(ctx)) // the run lease was lost
	case s.Interrupted() && runs == 0 && partial == errCut:
		fmt.Fprintf(p.Stderr, "%s: interrupted by Ctrl-C; the check line counts only the spends made before it\n", p.Step)
	case s.Interrupted() && runs == 0:
		fmt.Fprintf(p.Stderr, "%s: interrupted by Ctrl-C before the balance could be read (%v)\n", p.Step, partial)
		return ExitInterrupted
	case s.Interrupted():
		measured := len(r.Report.Phases())
		when := fmt.Sprintf("after %d of %d runs", measured, runs)
		if partial == errCut {
			when = fmt.Sprintf("during run %d of %d; its line counts only the spends made before it", measured+1, runs)
		} else if partial != nil {
			when = fmt.Sprintf("during run %d of %d; %v", measured+1, runs, partial)
		}
		fmt.Fprintf(p.Stderr, "%s: interrupted by Ctrl-C %s\n", p.Step, when)
		r.Report.Interrupt()
	}
	return p.Finish(ctx, r.Report)
}

var errCut = errors.New("cut short")

// Outcome is what one run or phase of a lesson found: its check, its
// figures beside the check in -json (under "figures" for a row program),
// and its lines. Every program with phases returns one (steps 1, 2, 3
// and 5).
type Outcome struct {
	Verdict  wallet.Verdict   `json:"-"`
	Figures  any              `json:"figures"`
	Setting  string           `json:"-"` // the phase's settings, in its first line (step 3); "": the lesson's account of it
	Story    string           `json:"-"` // what happened, the line above the check line (step 3)
	Lines    []string         `json:"-"` // the phase's lines: above the check line (step 5), below it (steps 1 and 2)
	Warnings []string         `json:"-"` // printed on stderr; the exit code stays
	Problems []string         `json:"-"` // what went wrong beyond the verdict: each makes the run exit 1
	History  *Linearizability `json:"-"` // the history's verdict: set by the loop from the run's history (history.go)
}
