// Step 1: the lost update, with no lock at all.
//
// Fifty "servers" each try to spend 10 from a wallet holding 100. Each one
// reads the balance, works for 2 ms, and writes back what it read minus 10.
// They all read 100 before anyone writes, so far more than ten spends are
// accepted while the balance drops by only a few of them. We don't want to
// do this: the rest of the repo fixes it.
//
// Expect, on every run (the numbers vary, the verdict does not):
//
//	accepted=50 balance=90 expected=-400 BROKEN linearizable=no
//
// Run it with:
//
//	go run ./cmd/step1-race
//	go run -race ./cmd/step1-race    # still BROKEN, and no race report
//	go run ./cmd/step1-race -runs 5  # five runs, one line each; -json for a machine
//	go run ./cmd/step1-race -procs 4 # the spenders in 4 processes: still BROKEN
//
// The race detector stays silent because the shared state lives in Redis,
// not in this process's memory; with -procs the spenders do not even share
// a process, and nothing changes. Ctrl-C stops the runs: the lines measured
// so far stay, the key is deleted, and the program exits 130.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/wallet"
)

const step = "step1-race"

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step1:", stdout, stderr).WithProcs()
	n := h.Flags.Int("n", 50, fmt.Sprintf("concurrent spenders, at most %d", harness.MaxN))
	amount := h.Flags.Int64("amount", 10, "amount each spender takes")
	initial := h.Flags.Int64("initial", 100, "starting balance")
	work := h.Flags.Duration("work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	runs := h.Flags.Int("runs", 1, "how many times to repeat, one line each")
	if code, ok := h.Parse(args, func() int { return *n }, func() []error {
		var bad error
		if *n < 1 || *amount < 1 || *initial < 0 || *work < 0 || *runs < 1 {
			bad = errors.New("-n, -amount and -runs must be at least 1; -initial and -work at least 0")
		}
		return []error{bad, harness.CheckMax("-n", *n, harness.MaxN), harness.CheckDuration("-work", *work), harness.CheckSpends(*initial, *amount, *n)}
	}); !ok {
		return code
	}
	key := wallet.BalanceKey(h.Prefix(), wallet.DemoWallet)

	// The lesson, once per -runs: fifty spenders at one balance, no lock.
	return h.Spenders(ctx, *n, *runs, "race", []string{key}, func(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
		// Set the balance, let the spenders at it all at once, read it back.
		tally, verdict, err := r.Hammer(ctx, key, *initial, *amount, nil, func(ctx context.Context) (bool, error) {
			// No lock: every spender reads, works and writes whenever it likes.
			return wallet.Spend(ctx, r.Redis, key, *amount, *work)
		})
		o := harness.Outcome{Verdict: verdict}
		// The check line: spends accepted against what is left. With few
		// spenders or no work the race may not show; the lesson promises it
		// only for settings that make it show.
		if line := harness.Outcomes(tally, *n, verdict); line != "" && err == nil && !r.Interrupted() {
			if len(tally.Errors) == *n {
				return o, errors.New(line) // not one spend got through
			}
			o.Warnings = append(o.Warnings, line)
		}
		return o, err
	})
}
