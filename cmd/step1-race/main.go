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
//	accepted=50 balance=90 expected=-400 BROKEN
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
	"flag"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/procs"
	"example.com/walletlock/internal/report"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/wallet"
)

const step = "step1-race"

func main() { cli.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	n := fs.Int("n", 50, fmt.Sprintf("concurrent spenders, at most %d", cli.MaxN))
	amount := fs.Int64("amount", 10, "amount each spender takes")
	initial := fs.Int64("initial", 100, "starting balance")
	work := fs.Duration("work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	runs := fs.Int("runs", 1, "how many times to repeat, one line each")
	nprocs := fs.Int("procs", 1, fmt.Sprintf("run the spenders in this many processes, copies of this program (at most %d and -n); 1: goroutines of this one", procs.Max))
	prefix := fs.String("prefix", wallet.DefaultPrefix+"step1:", "prefix of the Redis keys this run writes")
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	var bad error
	if *n < 1 || *amount < 1 || *initial < 0 || *work < 0 || *runs < 1 {
		bad = errors.New("-n, -amount and -runs must be at least 1; -initial and -work at least 0")
	}
	if code, stop := cli.Refuse(fs, stderr, bad, cli.CheckPrefix(*prefix), cli.CheckMax("-n", *n, cli.MaxN),
		cli.CheckDuration("-work", *work), cli.CheckSpends(*initial, *amount, *n), procs.Check(*nprocs, *n)); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, step+":", err); return 1 }

	rdb, err := services.Connect(ctx)
	if err != nil {
		return fail(err)
	}
	defer rdb.Close()
	key := wallet.BalanceKey(*prefix, wallet.DemoWallet)
	spenders := procs.Spenders{N: *n, Procs: *nprocs, Args: args, Stderr: stderr,
		// No lock: every spender reads, works and writes whenever it likes.
		Spend: func(ctx context.Context, _ int) (bool, error) { return wallet.Spend(ctx, rdb, key, *amount, *work) }}
	if procs.Child() { // one of the -procs copies: it spends, the parent does the rest
		return spenders.Serve(ctx, stdout, stderr)
	}
	// The run owns its prefix: a second run on it is refused, not mixed in.
	s, err := cli.Start(ctx, rdb, step, *prefix)
	if err != nil {
		return fail(err)
	}
	defer s.Close(stderr, key)
	ctx = s.Context() // ends at Ctrl-C

	r := report.New(step)
	r.Set("procs", *nprocs)
	var partial string // what Ctrl-C did to the run it cut short, if any
	for range *runs {
		if ctx.Err() != nil {
			break // Ctrl-C, or the run lease was lost: see below
		}
		if err := wallet.Set(ctx, rdb, key, *initial); err != nil {
			if ctx.Err() != nil {
				break
			}
			return fail(err)
		}
		tally, ok := cli.Await(s, func() wallet.Tally { return spenders.Run(ctx) })
		if !ok { // Ctrl-C, and Redis did not answer the spenders in time
			partial = "; its spenders got no answer from Redis in time"
			break
		}
		done, cancel := s.Cleanup() // the balance is read back even after Ctrl-C
		balance, err := wallet.Balance(done, rdb, key)
		cancel()
		switch {
		case ctx.Err() != nil && err != nil:
			partial = fmt.Sprintf("; its balance could not be read back (%v)", err)
		case ctx.Err() != nil:
			partial = "; its line counts only the spends made before it"
		case err != nil:
			return fail(err)
		}
		if err != nil {
			break
		}
		verdict := wallet.CheckUnknown(*initial, *amount, tally.Accepted, tally.Unknown, balance)
		if ctx.Err() != nil {
			r.Interrupted("race", verdict, nil) // measured, but not what the lesson is about
		} else {
			r.Add("race", verdict, nil)
		}
		if !*asJSON {
			fmt.Fprintln(stdout, verdict)
		}
		if line := cli.Outcomes(tally, *n, verdict); line != "" && ctx.Err() == nil {
			fmt.Fprintln(stderr, step+":", line)
			if len(tally.Errors) == *n {
				return 1
			}
		}
	}
	if ctx.Err() != nil && !s.Interrupted() {
		return fail(context.Cause(ctx))
	}
	if s.Interrupted() {
		r.Interrupt()
		measured := len(r.Phases())
		when := fmt.Sprintf("after %d of %d runs", measured, *runs)
		if partial != "" {
			when = fmt.Sprintf("during run %d of %d%s", measured+1, *runs, partial)
		}
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C %s\n", step, when)
	}
	// With few spenders or no work the race may not show; the lesson
	// promises it only for settings that make it show.
	return r.Finish(stdout, stderr, *asJSON)
}
