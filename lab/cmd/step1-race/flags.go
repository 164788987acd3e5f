package main

// Step 1's flags, and the harness call that runs the lesson (main.go).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/wallet"
)

const step = "step1-race"

// race holds what the flags set, and the wallet's key: the lesson is its method.
type race struct {
	n, runs         int
	amount, initial int64
	work            time.Duration
	key             string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step1:", stdout, stderr).WithProcs()
	var f race
	h.Flags.IntVar(&f.n, "n", 50, fmt.Sprintf("concurrent spenders, at most %d", harness.MaxN))
	h.Flags.Int64Var(&f.amount, "amount", 10, "amount each spender takes")
	h.Flags.Int64Var(&f.initial, "initial", 100, "starting balance")
	h.Flags.DurationVar(&f.work, "work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	h.Flags.IntVar(&f.runs, "runs", 1, "how many times to repeat, one line each")
	if code, ok := h.Parse(args, func() int { return f.n }, func() []error {
		var bad error
		if f.n < 1 || f.amount < 1 || f.initial < 0 || f.work < 0 || f.runs < 1 {
			bad = errors.New("-n, -amount and -runs must be at least 1; -initial and -work at least 0")
		}
		return []error{bad, harness.CheckMax("-n", f.n, harness.MaxN), harness.CheckDuration("-work", f.work), harness.CheckSpends(f.initial, f.amount, f.n)}
	}); !ok {
		return code
	}
	f.key = wallet.BalanceKey(h.Prefix(), wallet.DemoWallet)
	return h.Spenders(ctx, f.n, f.runs, "race", []string{f.key}, f.lesson)
}
