// Package phaserun runs a step's phases one after another within a
// harness.Session (step 3), each on a fresh balance in Redis: it waits for
// each one, and after Ctrl-C only until the clean-up deadline, prints its
// three lines, adds it to the report and ends the run with the report's
// exit code.
//
//	phase 2: ttl 600ms, work 1.2s, watchdog every 200ms
//	  0 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=70 expected=70 OK
package phaserun

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/wallet"
)

// Outcome is what one phase found.
type Outcome struct {
	Verdict  wallet.Verdict
	Figures  any      // beside the check in -json (harness.Add)
	Setting  string   // the phase's settings, in its first line
	Story    string   // what happened, the line above the check line
	Problems []string // what went wrong beyond the verdict: each makes the run exit 1
}

// Phase is one phase of the lesson, named as in lesson.Phases.
type Phase struct {
	Name string
	Run  func(ctx context.Context) (Outcome, error)
}

// Run is one run of a program's phases on one balance, guarded by one
// lock key. Its fields say what the run works with; none may change once a
// phase has started.
type Run struct {
	Step                string           // the program, for its messages
	Session             *harness.Session // its Context is the phases'
	Redis               redis.UniversalClient
	BalanceKey, LockKey string
	Initial, Amount     int64 // the balance each phase starts from, and each spend
	Report              *harness.Report
	JSON                bool // print nothing but the report's JSON on stdout
	Stdout, Stderr      io.Writer
}

// Fresh restores the balance and frees the lock key: each phase starts
// from the same state, so a phase run alone tells the same story.
func (x *Run) Fresh(ctx context.Context) error {
	if err := x.Redis.Del(ctx, x.LockKey).Err(); err != nil {
		return fmt.Errorf("free %s: %w", x.LockKey, err)
	}
	return wallet.Set(ctx, x.Redis, x.BalanceKey, x.Initial)
}

// Check reads the balance back, even after Ctrl-C, and checks it against
// the accepted spends and those whose outcome is unknown
// (wallet.CheckUnknown).
func (x *Run) Check(accepted, unknown int) (wallet.Verdict, error) {
	ctx, cancel := x.Session.Cleanup()
	defer cancel()
	balance, err := wallet.Balance(ctx, x.Redis, x.BalanceKey)
	if err != nil {
		return wallet.Verdict{}, err
	}
	return wallet.CheckUnknown(x.Initial, x.Amount, accepted, unknown, balance), nil
}

// Phases runs the phases in order and returns the exit code.
//
// A phase that fails ends the run at once: "step: phase N: err" on
// stderr (the lost run lease instead of err when that ended the work), and
// 1. After Ctrl-C the phase it cut short is printed, with its story
// replaced, and reported as interrupted, not judged; stderr says where
// Ctrl-C came and the code is 130. Otherwise each Problem is one line on
// stderr, and the code is harness.Finish's.
func (x *Run) Phases(phases []Phase) int {
	s, r, ctx := x.Session, x.Report, x.Session.Context()
	type ran struct {
		o   Outcome
		err error
	}
	cut := ""             // the phase Ctrl-C interrupted
	var problems []string // what went wrong beyond the verdicts
	for _, p := range phases {
		got, done := harness.Await(s, func() ran { o, err := p.Run(ctx); return ran{o, err} })
		o, err := got.o, got.err
		if s.Interrupted() {
			if cut = p.Name; !done || err != nil {
				break // nothing measured: Redis did not answer in time
			}
			o.Story, o.Problems = "interrupted by Ctrl-C: the check counts only the spends made before it", nil
		} else if !done || err != nil {
			if ctx.Err() != nil {
				err = context.Cause(ctx) // the run lease was lost
			}
			fmt.Fprintf(x.Stderr, "%s: phase %s: %v\n", x.Step, p.Name, err)
			return 1
		}
		if !x.JSON {
			fmt.Fprintf(x.Stdout, "phase %s: %s\n  %s\n  %s\n", p.Name, o.Setting, o.Story, o.Verdict)
		}
		if cut != "" {
			r.Interrupted(p.Name, o.Verdict, o.Figures) // measured, but not what the lesson is about
			break
		}
		r.Add(p.Name, o.Verdict, o.Figures)
		for _, problem := range o.Problems {
			problems = append(problems, fmt.Sprintf("phase %s: %s", p.Name, problem))
		}
	}
	if s.Interrupted() {
		r.Interrupt()
		at := "after the last phase"
		if cut != "" {
			at = "during phase " + cut
		}
		fmt.Fprintf(x.Stderr, "%s: interrupted by Ctrl-C %s\n", x.Step, at)
		return r.Finish(x.Stdout, x.Stderr, x.JSON)
	}
	for _, problem := range problems {
		r.Fail(x.Stderr, errors.New(problem))
	}
	return r.Finish(x.Stdout, x.Stderr, x.JSON)
}
