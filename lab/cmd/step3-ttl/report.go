package main

// What each phase of step 3 (main.go) says and checks beside its balance.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

// Phases 1 and 2, as the phase loop calls them.
func (e *env) noWatchdog(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return e.crowd(ctx, r, false)
}
func (e *env) watchdog(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return e.crowd(ctx, r, true)
}

// figures are what a phase saw, beside its check in the JSON.
type figures struct {
	NotHeld  int        `json:"releases_not_held"` // releases that found the lease gone
	Releases int        `json:"releases"`          // releases attempted
	Unknown  int        `json:"unknown_spends"`    // spends whose outcome is unknown (sent, no reply)
	Cause    string     `json:"cause,omitempty"`   // phase 3: why the work was cancelled
	mu       sync.Mutex // the spenders of phases 1 and 2 release at once
	problems []string   // releases that failed for another reason than a lost lease
}

// released counts one spender's release, and its error: lock.ErrNotHeld
// when the lease was gone.
func (f *figures) released(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Releases++
	switch {
	case errors.Is(err, lock.ErrNotHeld):
		f.NotHeld++
	case err != nil:
		f.problems = append(f.problems, err.Error())
	}
}

// judgeCrowd is phase 1's or 2's outcome: the story of its releases, its
// check, and a problem for each thing that went wrong.
func (e *env) judgeCrowd(r *harness.Run, tally wallet.Tally, f *figures, watch bool) (harness.Outcome, error) {
	o := harness.Outcome{Setting: fmt.Sprintf("ttl %v, work %v, no watchdog", e.ttl, e.work), Problems: f.problems}
	if watch {
		o.Setting = fmt.Sprintf("ttl %v, work %v, watchdog every %v", e.ttl, e.work, every(e.ttl))
	}
	o.Story = fmt.Sprintf("%d of %d releases found the lease gone and deleted nothing", f.NotHeld, f.Releases)
	f.Unknown, o.Figures = tally.Unknown, f
	v, err := r.Check(e.balanceKey, initial, amount, tally.Accepted, tally.Unknown)
	o.Verdict = v
	if line := harness.Outcomes(tally, e.n, o.Verdict); line != "" {
		o.Problems = append(o.Problems, line)
	}
	if watch && f.NotHeld > 0 {
		o.Problems = append(o.Problems, fmt.Sprintf("%d releases found the lease gone: the watchdog did not keep it", f.NotHeld))
	}
	return o, err
}

// judgeTakeover is phase 3's outcome, from its spend, why its work was
// cancelled, the other client's write and the release after it.
func (e *env) judgeTakeover(r *harness.Run, ok bool, spendErr, cause, takeErr, releaseErr error) (harness.Outcome, error) {
	o, f := harness.Outcome{Setting: fmt.Sprintf("lease taken over %v into the work, watchdog every %v", e.work/3, every(e.ttl))}, &figures{Releases: 1}
	if takeErr != nil {
		return o, takeErr
	}
	switch {
	case errors.Is(releaseErr, lock.ErrNotHeld):
		f.NotHeld = 1 // and the other holder's key is left alone
	case releaseErr != nil:
		o.Problems = append(o.Problems, releaseErr.Error())
	default:
		o.Problems = append(o.Problems, "the release succeeded: the takeover did not happen")
	}
	accepted, unknown := harness.Counted(ok, spendErr)
	if !errors.Is(spendErr, lock.ErrNotHeld) {
		o.Problems = append(o.Problems, fmt.Sprintf("the spend was not cancelled for a lost lease (accepted %v, error %v)", ok, spendErr))
		o.Story = "the spend was not cancelled"
	} else {
		f.Cause = cause.Error()
		o.Story = "the watchdog cancelled the spend before its write, cause: " + f.Cause
	}
	f.Unknown, o.Figures = unknown, f
	var err error
	o.Verdict, err = r.Check(e.balanceKey, initial, amount, accepted, unknown)
	return o, err
}

// every is how often the watchdog refreshes, rounded for printing.
func every(ttl time.Duration) time.Duration {
	if d := ttl / 3; d < 10*time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return (ttl / 3).Round(time.Millisecond)
}
