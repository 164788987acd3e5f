package main

// Step 4's flags, and the harness call that runs one burst of spenders per
// strategy (main.go).

import (
	"context"
	"io"
	"slices"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/redislockx"
	"example.com/walletlock/lab/wallet"
)

// env is what a spend needs of the flags, and the run's keys; spend is
// its method.
type env struct {
	ttl, wait, work     time.Duration
	balanceKey, lockKey string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step4:", stdout, stderr)
	which := h.Flags.String("strategy", "all", "lockstep, exponential, jitter or all")
	f := h.AddLockFlags(harness.LockFlags{N: 50, TTL: 2 * time.Second, Wait: 10 * time.Second, Work: 2 * time.Millisecond})
	var s redislockx.Setting
	var chosen []redislockx.Strategy
	if code, ok := h.Parse(args, nil, func() []error {
		var err error
		chosen, err = pick(*which)
		s = redislockx.Setting{N: f.N, Work: f.Work, TTL: f.TTL, Wait: f.Wait}
		return []error{err, s.Check()} // redislockx's checks: it refuses -ttl 0, which redislock would take
	}); !ok {
		return code
	}
	s.Prefix = h.Prefix()
	e := &env{ttl: f.TTL, wait: f.Wait, work: f.Work}
	e.balanceKey, e.lockKey = wallet.BalanceKey(s.Prefix, wallet.DemoWallet), wallet.LockKey(s.Prefix, wallet.DemoWallet)
	return redislockx.Compare(ctx, h, s, e.balanceKey, e.lockKey, initial, amount, chosen, e.spend)
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
