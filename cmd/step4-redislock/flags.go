package main

// Step 4's flags, and the harness call that runs one burst of spenders per
// strategy (main.go).

import (
	"context"
	"io"
	"slices"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/redislockx"
	"example.com/walletlock/wallet"
)

// env is the setting the flags give redislockx.Compare, and the run's
// keys; spend is its method.
type env struct {
	redislockx.Setting
	balanceKey, lockKey string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step4:", stdout, stderr)
	which := h.Flags.String("strategy", "all", "lockstep, exponential, jitter or all")
	f := h.AddLockFlags(harness.LockFlags{N: 50, TTL: 2 * time.Second, Wait: 10 * time.Second, Work: 2 * time.Millisecond})
	var e env
	var chosen []redislockx.Strategy
	if code, ok := h.Parse(args, nil, func() []error {
		var err error
		chosen, err = pick(*which)
		e.Setting = redislockx.Setting{N: f.N, Work: f.Work, TTL: f.TTL, Wait: f.Wait}
		return []error{err, e.Check()} // redislockx's checks: it refuses -ttl 0, which redislock would take
	}); !ok {
		return code
	}
	e.Prefix = h.Prefix()
	e.balanceKey, e.lockKey = wallet.BalanceKey(e.Prefix, wallet.DemoWallet), wallet.LockKey(e.Prefix, wallet.DemoWallet)
	return redislockx.Compare(ctx, h, e.Setting, e.balanceKey, e.lockKey, initial, amount, chosen, e.spend)
}

// pick returns the strategies -strategy names (harness.Pick).
func pick(value string) ([]redislockx.Strategy, error) {
	names := make([]string, len(strategies))
	for i, s := range strategies {
		names[i] = s.Name
	}
	picked, err := harness.Pick("-strategy", value, names)
	return slices.DeleteFunc(slices.Clone(strategies), func(s redislockx.Strategy) bool { return !slices.Contains(picked, s.Name) }), err
}
