package main

// Step 3's flags, and the harness call that runs the phases (main.go).

import (
	"context"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

// env is what the flags set and the run's keys: the phases are its methods.
type env struct {
	n                   int           // -n
	ttl, work           time.Duration // -ttl, -work; no -wait: acquire waits for every spender's turn
	balanceKey, lockKey string
}

const step = "step3-ttl"
const initial, amount = 100, 10 // each phase's balance, and each spend

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step3:", stdout, stderr)
	var e env
	// Each refresh gets TTL/3 (200ms) to answer: a round trip on a busy
	// machine under -race can take over 100ms. The work is two TTLs, so
	// phase 1's lease always expires mid-work, and phase 2 stays near 3.6 s.
	h.Flags.DurationVar(&e.ttl, "ttl", 600*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	h.Flags.DurationVar(&e.work, "work", 1200*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	h.Flags.IntVar(&e.n, "n", 3, fmt.Sprintf("spenders in phases 1 and 2 (phase 2 takes n x work), at most %d", harness.MaxN))
	only := h.Flags.String("phase", "all", "which phase to run: 1, 2, 3 or all")
	var chosen []harness.Phase
	if code, ok := h.Parse(args, nil, func() []error {
		var err error
		chosen, err = harness.Choose("-phase", *only, e.phases())
		return append([]error{err}, (&harness.LockFlags{N: e.n, TTL: e.ttl, Work: e.work}).Check(lock.CheckTTL)...)
	}); !ok {
		return code
	}
	e.balanceKey, e.lockKey = wallet.BalanceKey(h.Prefix(), wallet.DemoWallet), wallet.LockKey(h.Prefix(), wallet.DemoWallet)
	return h.Phases(ctx, []string{e.balanceKey, e.lockKey}, map[string]any{"ttl": e.ttl.String(), "work": e.work.String(), "n": e.n}, chosen)
}
