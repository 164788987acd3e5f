package main

// The printing side of step 2: the check line and whether a lock was left
// behind, or the same as JSON, and the exit code.

import (
	"encoding/json"
	"fmt"
	"io"

	"example.com/walletlock/lesson"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

type report struct {
	Redis    string             `json:"redis_version"`
	Release  lock.ReleaseMethod `json:"release"` // what releases used: lua or delex
	LockLeft bool               `json:"lock_left"`

	lockKey                string
	verdict                wallet.Verdict
	spendErrs, releaseErrs []error
}

// print writes the report and returns the exit code: 0 when the check line
// says what the lesson promises, nothing failed and no lock is left.
func (r report) print(stdout, stderr io.Writer, asJSON bool) int {
	result := lesson.NewResult(step, "lock", r.verdict.String(), r.verdict.OK)
	if asJSON {
		json.NewEncoder(stdout).Encode(struct {
			Step string `json:"step"`
			report
			FailedSpends   int             `json:"failed_spends"`
			FailedReleases int             `json:"failed_releases"`
			Phases         []lesson.Result `json:"phases"`
		}{step, r, len(r.spendErrs), len(r.releaseErrs), []lesson.Result{result}})
	} else {
		left := "no"
		if r.LockLeft {
			left = "YES"
		}
		fmt.Fprintln(stdout, r.verdict)
		fmt.Fprintf(stdout, "lock key left behind: %s (released with %s, Redis %s)\n", left, r.Release, r.Redis)
	}

	code := 0
	complain := func(format string, a ...any) {
		fmt.Fprintf(stderr, step+": "+format+"\n", a...)
		code = 1
	}
	if len(r.spendErrs) > 0 {
		complain("%d spends failed, first: %v", len(r.spendErrs), r.spendErrs[0])
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
