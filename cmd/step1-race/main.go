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
//	go run -race ./cmd/step1-race   # still BROKEN, and no race report
//	go run ./cmd/step1-race -runs 5 # five runs, one line each; -json for a machine
//
// The race detector stays silent because the shared state lives in Redis,
// not in this process's memory.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/lesson"
	"example.com/walletlock/wallet"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("step1-race", flag.ContinueOnError)
	n := fs.Int("n", 50, "concurrent spenders")
	amount := fs.Int64("amount", 10, "amount each spender takes")
	initial := fs.Int64("initial", 100, "starting balance")
	work := fs.Duration("work", 2*time.Millisecond, "time between the read and the write")
	runs := fs.Int("runs", 1, "how many times to repeat, one line each")
	prefix := fs.String("prefix", wallet.DefaultPrefix+"step1:", "prefix of the Redis keys this run writes")
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	if *n < 1 || *amount < 1 || *initial < 0 || *work < 0 || *runs < 1 {
		fmt.Fprintln(stderr, "step1-race: -n, -amount and -runs must be at least 1; -initial and -work at least 0")
		return 2
	}

	rdb, err := wallet.Connect(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "step1-race:", err)
		return 1
	}
	defer rdb.Close()

	key := wallet.BalanceKey(*prefix, wallet.DemoWallet)
	defer rdb.Del(context.Background(), key)
	var results []lesson.Result
	for range *runs {
		if err := wallet.Set(ctx, rdb, key, *initial); err != nil {
			fmt.Fprintln(stderr, "step1-race:", err)
			return 1
		}
		// No lock: every spender reads, works and writes whenever it likes.
		tally := wallet.Hammer(*n, func(int) (bool, error) {
			return wallet.Spend(ctx, rdb, key, *amount, *work)
		})
		balance, err := wallet.Balance(ctx, rdb, key)
		if err != nil {
			fmt.Fprintln(stderr, "step1-race:", err)
			return 1
		}
		verdict := wallet.Check(*initial, *amount, tally.Accepted, balance)
		results = append(results, lesson.NewResult("step1-race", "race", verdict.String(), verdict.OK))
		if !*asJSON {
			fmt.Fprintln(stdout, verdict)
		}
		if len(tally.Errors) > 0 {
			fmt.Fprintf(stderr, "step1-race: %d of %d spends failed, first: %v\n", len(tally.Errors), *n, tally.Errors[0])
			if len(tally.Errors) == *n {
				return 1
			}
		}
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(map[string]any{"step": "step1-race", "phases": results})
	}
	for _, r := range results {
		if !r.Match() {
			// With few spenders or no work the race may not show; the lesson
			// promises it only for settings that make it show.
			fmt.Fprintf(stderr, "step1-race: a run printed %s where the lesson expects %s; try the defaults\n", r.Verdict, r.Want)
			return 1
		}
	}
	return 0
}
