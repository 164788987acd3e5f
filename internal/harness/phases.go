package harness

// The phase loop of a program whose phases are the lesson (step 3): each
// phase in turn, waited for (after Ctrl-C only until the clean-up
// deadline), printed in three lines and added to the report:
//
//	phase 2: ttl 600ms, work 1.2s, watchdog every 200ms
//	  0 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=70 expected=70 OK

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"example.com/walletlock/internal/services"
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
// It is the one parser of such lists: step 3's -phase, step 6's -strategy
// (loadtest.ParseStrategies) and the drill's -nemesis and -strategy.
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

// Phases connects to Redis, takes the run lease on the prefix, sets the
// server's version in the report, and runs the phases in order; keys are
// the run's, deleted at the end. It returns the exit code.
//
// A phase that fails ends the run at once: "step: phase N: err" on
// stderr (the lost run lease instead of err when that ended the work), and
// 1. After Ctrl-C the phase it cut short is printed, with its story
// replaced, and reported as interrupted, not judged; stderr says where
// Ctrl-C came and the code is 130. Otherwise each Problem is one line on
// stderr, and the code is the report's.
func (p *Program) Phases(ctx context.Context, keys []string, report func(r *Report), phases []Phase) int {
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
	defer s.Close(p.Stderr, keys...)
	r := &Run{Redis: rdb, Prefix: p.Prefix(), Report: NewReport(p.Step), p: p, session: s}
	r.Report.Set("redis_version", version)
	report(r.Report)
	ctx = s.Context()
	type ran struct {
		o   Outcome
		err error
	}
	cut := ""             // the phase Ctrl-C interrupted
	var problems []string // what went wrong beyond the verdicts
	for _, ph := range phases {
		got, done := Await(s, func() ran { o, err := ph.Run(ctx, r); return ran{o, err} })
		o, err := got.o, got.err
		if s.Interrupted() {
			if cut = ph.Name; !done || err != nil {
				break // nothing measured: Redis did not answer in time
			}
			o.Story, o.Problems = "interrupted by Ctrl-C: the check counts only the spends made before it", nil
		} else if !done || err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx) // the run lease was lost
			}
			fmt.Fprintf(p.Stderr, "%s: phase %s: %v\n", p.Step, ph.Name, err)
			return 1
		}
		if !p.JSON() {
			fmt.Fprintf(p.Stdout, "phase %s: %s\n  %s\n  %s\n", ph.Name, o.Setting, o.Story, o.Verdict)
		}
		if cut != "" {
			r.Report.Interrupted(ph.Name, o.Verdict, o.Figures) // measured, but not what the lesson is about
			break
		}
		r.Report.Add(ph.Name, o.Verdict, o.Figures)
		for _, problem := range o.Problems {
			problems = append(problems, fmt.Sprintf("phase %s: %s", ph.Name, problem))
		}
	}
	if s.Interrupted() {
		r.Report.Interrupt()
		at := "after the last phase"
		if cut != "" {
			at = "during phase " + cut
		}
		fmt.Fprintf(p.Stderr, "%s: interrupted by Ctrl-C %s\n", p.Step, at)
		return r.Report.Finish(p.Stdout, p.Stderr, p.JSON())
	}
	for _, problem := range problems {
		r.Report.Fail(p.Stderr, errors.New(problem))
	}
	return r.Report.Finish(p.Stdout, p.Stderr, p.JSON())
}
