package main

// The printing side of step 2: the check line and whether a lock was left
// behind, or the same as JSON, and the exit code.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/wallet"
)

type report struct {
	Redis       string `json:"redis_version"`
	Release     string `json:"release"` // what releases used: lua or delex
	Procs       int    `json:"procs"`   // the spenders ran in this many processes
	LockLeft    bool   `json:"lock_left"`
	Interrupted bool   `json:"interrupted"` // Ctrl-C: the check counts the spends made before it

	lockKey     string
	n           int
	verdict     wallet.Verdict
	tally       wallet.Tally
	releaseErrs []error
}

// print writes the report and returns the exit code: 0 when the check line
// says what the lesson promises, nothing failed and no lock is left; 130
// after Ctrl-C, whatever the line says.
func (r report) print(stdout, stderr io.Writer, asJSON bool) int {
	result := lesson.NewResult(step, "lock", r.verdict.String(), r.verdict.OK)
	phases, cutShort := []lesson.Result{result}, (*lesson.Result)(nil)
	if r.Interrupted { // measured, but not what the lesson is about
		phases, cutShort = []lesson.Result{}, &result
	}
	if asJSON {
		json.NewEncoder(stdout).Encode(struct {
			Step string `json:"step"`
			report
			FailedSpends   int             `json:"failed_spends"`
			UnknownSpends  int             `json:"unknown_spends"`
			FailedReleases int             `json:"failed_releases"`
			Phases         []lesson.Result `json:"phases"`
			CutShort       *lesson.Result  `json:"interrupted_phase,omitempty"`
		}{step, r, len(r.tally.Errors), r.tally.Unknown, len(r.releaseErrs), phases, cutShort})
	} else {
		left := "no"
		if r.LockLeft {
			left = "YES"
		}
		fmt.Fprintln(stdout, r.verdict)
		fmt.Fprintf(stdout, "lock key left behind: %s (released with %s, Redis %s)\n", left, r.Release, r.Redis)
	}
	if r.Interrupted {
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C; the check line counts only the spends made before it\n", step)
		return cli.ExitInterrupted
	}

	code := 0
	complain := func(format string, a ...any) {
		fmt.Fprintf(stderr, step+": "+format+"\n", a...)
		code = 1
	}
	if line := cli.Outcomes(r.tally, r.n, r.verdict); line != "" {
		complain("%s", line)
	}
	if len(r.releaseErrs) > 0 {
		complain("%d releases failed, first: %v", len(r.releaseErrs), r.releaseErrs[0])
	}
	if r.LockLeft {
		complain("the lock key %s is still there after every spender released it", r.lockKey)
	}
	if !result.Match() {
		complain("the check line says %s, the lesson says %s", result.Verdict, result.Want)
	}
	return code
}

// failed reports an error that stopped the run before its check line:
// after Ctrl-C it says the run was interrupted and returns 130; when the
// run lease was lost, it names that as the cause.
func failed(stderr io.Writer, s *cli.Session, err error) int {
	switch {
	case s.Interrupted():
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C before the balance could be read (%v)\n", step, err)
		return cli.ExitInterrupted
	case s.Context().Err() != nil:
		err = context.Cause(s.Context())
	}
	fmt.Fprintln(stderr, step+":", err)
	return 1
}
