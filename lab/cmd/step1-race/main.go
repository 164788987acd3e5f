// Step 1: the lost update. Fifty spenders read a balance of 100, work 2 ms
// and write back what they read minus 10, with no lock: all fifty are
// accepted, the balance drops by a few, and go run -race stays silent.
//
//	accepted=50 balance=90 expected=-400 BROKEN linearizable=no
package main

import (
	"context"
	"errors"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/wallet"
)

func main() { harness.Main(run) } // run (flags.go): the flags, then the lesson once per -runs

// lesson is one run: fifty spenders at one balance, and nothing between them.
func (f *race) lesson(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	// Set the balance, let the spenders at it all at once, read it back.
	tally, verdict, err := r.Hammer(ctx, f.key, f.initial, f.amount, nil, func(ctx context.Context) (bool, error) {
		// No lock: every spender reads, works and writes whenever it likes.
		return wallet.Spend(ctx, r.Redis, f.key, f.amount, f.work)
	})
	o := harness.Outcome{Verdict: verdict}
	// The check line: spends accepted against what is left. With few
	// spenders or no work the race may not show; the lesson promises it
	// only for settings that make it show.
	if line := harness.Outcomes(tally, f.n, verdict); line != "" && err == nil && !r.Interrupted() {
		if len(tally.Errors) == f.n {
			return o, errors.New(line) // not one spend got through
		}
		o.Warnings = append(o.Warnings, line)
	}
	return o, err
}
