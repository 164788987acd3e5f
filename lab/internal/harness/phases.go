package harness

// The phase loop of a program whose phases are the lesson (steps 3 and
// 5): each phase in turn, waited for (after Ctrl-C only until the
// clean-up deadline), printed and added to the report:
//
//	phase 2: ttl 600ms, work 1.2s, watchdog every 200ms
//	  0 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=70 expected=70 OK

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/wallet"
)

// Phase is one phase of a lesson, named as in lesson.Phases.
type Phase struct {
	Name string
	Run  func(ctx context.Context, r *Run) (Outcome, error)
}

// Pick returns the names chosen by a list flag's value (-phase, -strategy,
// -nemesis): one name, several separated by commas (spaces around a name
// are dropped, a name given twice counts once), or "all" for every one of
// all, in all's order. An unknown name is refused with the flag's name and
// what it accepts, for Refuse to print (exit 2):
//
//	unknown -phase "7" (want all or some of 1, 2, 3)
//
// It is the one parser of such lists: the -phase of steps 3 and 5, the
// -strategy of step 4, step 6 (loadtest.ParseStrategies) and the drill,
// and the drill's -nemesis.
func Pick(flag, value string, all []string) ([]string, error) {
	if value == "all" {
		return all, nil
	}
	var out []string
	for name := range strings.SplitSeq(value, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(all, name) {
			return nil, fmt.Errorf("unknown %s %q (want all or some of %s)", flag, name, strings.Join(all, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Choose returns the phases a list flag's value names (Pick), in the
// lesson's order, which is all's.
func Choose(flag, value string, all []Phase) ([]Phase, error) {
	return ChooseBy(flag, value, all, func(p Phase) string { return p.Name })
}

// ChooseBy is Choose for phases of another type (fencing.Phase), named by
// name.
func ChooseBy[P any](flag, value string, all []P, name func(P) string) ([]P, error) {
	names := make([]string, len(all))
	for i, p := range all {
		names[i] = name(p)
	}
	picked, err := Pick(flag, value, names)
	return slices.DeleteFunc(slices.Clone(all), func(p P) bool { return !slices.Contains(picked, name(p)) }), err
}

// Phases connects to Redis, takes the run lease on the prefix, sets the
// server's version and settings in the report, and runs the phases in
// order (step 3); keys are the run's, deleted at the end. It returns the
// exit code, as the phase loop below says.
func (p *Program) Phases(ctx context.Context, keys []string, settings map[string]any, phases []Phase) int {
	rdb, err := services.Connect(ctx)
	if err != nil {
		return p.Fail(err)
	}
	defer rdb.Close()
	version, err := services.RedisVersion(ctx, rdb)
	if err != nil {
		return p.Fail(err)
	}
	s, err := Start(ctx, rdb, p.Step, p.Prefix())
	if err != nil {
		return p.Fail(err)
	}
	r := &Run{Redis: rdb, Prefix: p.Prefix(), Report: NewReport(p.Step), p: p, session: s, parent: ctx, work: s.Context()}
	r.Report.Set("redis_version", version)
	r.Report.SetEach(settings)
	return p.Loop(r, phases, 0, func() { s.Close(p.Stderr, keys...) })
}

// NewRun is a run for a program that opens its own services before its
// phases (internal/fencing): it sets Redis, takes the run lease with
// TakeLease, and hands the run to Loop. spenders is -n, for the lesson's
// "50 " in a phase's title.
func (p *Program) NewRun(ctx context.Context, spenders int) *Run {
	return &Run{Prefix: p.Prefix(), Report: NewReport(p.Step), N: spenders, p: p, parent: ctx, work: ctx}
}

// TakeLease takes the run lease on the prefix with rdb (Start): from then
// on the run's context also ends when the lease is lost.
func (r *Run) TakeLease(ctx context.Context, rdb redis.UniversalClient) error {
	s, err := Start(ctx, rdb, r.p.Step, r.Prefix)
	if err != nil {
		return err
	}
	r.session, r.work = s, s.Context()
	return nil
}

// GiveBack deletes keys and gives the run lease back (Session.Close),
// naming on stderr what it could not delete; without a lease it does
// nothing.
func (r *Run) GiveBack(stderr io.Writer, keys ...string) {
	if r.session != nil {
		r.session.Close(stderr, keys...)
	}
}

// Context ends at Ctrl-C, and when the run lease is lost.
func (r *Run) Context() context.Context { return r.work }

// Loop runs the phases in turn, each bounded by limit (0: none), then
// calls cleanup and ends the report. It returns the exit code.
//
// A phase prints "phase N: " and its Setting (the lesson's account of the
// phase when it has none), then its Story, its Lines and its check line.
// A phase that fails ends the run: "step: phase N: err" on stderr (the
// lost run lease instead of err when that ended the work), and 1; the
// report still ends, with -json, once a phase has been recorded. After
// Ctrl-C the phase it cut short, if it measured anything, is printed with
// its story replaced and reported as interrupted, not judged; stderr says
// where Ctrl-C came and the code is 130. Otherwise each Problem is one
// line on stderr, and the code is the report's.
func (p *Program) Loop(r *Run, phases []Phase, limit time.Duration, cleanup func()) int {
	ctx := r.work // ends at Ctrl-C, and when the run lease is lost
	type ran struct {
		o   Outcome
		err error
	}
	cut, measured, ended := "", false, 0 // the phase Ctrl-C cut short; whether it measured; the phases that ran
	var failure error                    // what stopped the run, if anything did
	var problems []string                // what went wrong beyond the verdicts
	for _, ph := range phases {
		if r.Interrupted() {
			break // Ctrl-C between two phases
		}
		fn := func() ran {
			ctx, cancel := ctx, context.CancelFunc(func() {})
			if limit > 0 {
				ctx, cancel = context.WithTimeout(ctx, limit)
			}
			defer cancel()
			o, err := ph.Run(ctx, r)
			r.checked(r.work, &o)
			return ran{o, err}
		}
		got, done := ran{}, true
		if r.session != nil { // without Redis there is nothing to wait for: pgx gives up as soon as ctx ends
			got, done = Await(r.session, fn)
		} else {
			got = fn()
		}
		o, err := got.o, got.err
		var owned *wallet.OwnedError
		switch {
		case r.Interrupted():
			if cut, measured = ph.Name, done && err == nil; !measured {
				r.Report.Set("interrupted_during", ph.Name)
			}
			o.Story, o.Lines, o.Problems = "interrupted by Ctrl-C: the check counts only the spends made before it", nil, nil
		case done && err == nil:
		case ctx.Err() != nil:
			failure = fmt.Errorf("phase %s: %w", ph.Name, context.Cause(ctx)) // the run lease was lost
		case errors.As(err, &owned):
			failure = owned // the one line says it all
		default:
			failure = fmt.Errorf("phase %s: %w", ph.Name, err)
		}
		if failure != nil || (cut != "" && !measured) {
			break
		}
		ended++
		p.show(r, ph.Name, o)
		figures := o.Figures
		if r.OneRow {
			figures = o // a wallet row's figures go under "figures" (step 5)
		}
		if cut != "" {
			r.Report.InterruptedChecked(ph.Name, o.Verdict, o.History, figures) // measured, but not what the lesson is about
			break
		}
		r.Report.AddChecked(ph.Name, o.Verdict, o.History, figures)
		p.Keep(ph.Name, o.History)
		for _, problem := range o.Problems {
			problems = append(problems, fmt.Sprintf("phase %s: %s", ph.Name, problem))
		}
	}
	cleanup()
	switch {
	case r.Interrupted():
		at := "between two phases"
		switch {
		case cut != "" && measured:
			at = "during phase " + cut
		case cut != "":
			at = "during phase " + cut + ", which is not judged"
		case ended == len(phases):
			at = "after the last phase"
		}
		fmt.Fprintf(p.Stderr, "%s: interrupted by Ctrl-C %s\n", p.Step, at)
		r.Report.Interrupt()
		return p.Finish(ctx, r.Report)
	case failure != nil && len(r.Report.Phases()) == 0:
		return p.Fail(failure) // nothing to report
	case failure != nil:
		r.Report.Fail(p.Stderr, errors.New(OneLine(failure)))
	}
	for _, problem := range problems {
		r.Report.Fail(p.Stderr, errors.New(problem))
	}
	return p.Finish(ctx, r.Report)
}

// show prints a phase, unless -json.
func (p *Program) show(r *Run, name string, o Outcome) {
	if p.JSON() {
		return
	}
	if r.OneRow {
		fmt.Fprintln(p.Stdout) // below the versions line, and between phases
	}
	if o.Setting == "" {
		what, _ := lesson.Lookup(p.Step, name)
		o.Setting = strings.Replace(what.What, "50 ", strconv.Itoa(r.N)+" ", 1) // the lesson's fifty, or -n
	}
	fmt.Fprintf(p.Stdout, "phase %s: %s\n", name, o.Setting)
	lines := o.Lines
	if o.Story != "" {
		lines = append([]string{o.Story}, lines...)
	}
	for _, line := range append(lines, CheckLine(o.Verdict, o.History)) {
		fmt.Fprintln(p.Stdout, "  "+line)
	}
}
