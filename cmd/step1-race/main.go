// Step 1: the lost update. Fifty requests each try to spend 10 from a
// balance of 100, with nothing to keep them apart: each reads the balance,
// decides it can pay, and writes back its own new balance over the others.
// Far more spends are accepted than the money allows, and the balance
// records only a few of them. Expect BROKEN on every run, numbers varying:
//
//	accepted=50 balance=80 expected=-400 BROKEN
//
// Go's race detector finds nothing, because the shared state is in Redis,
// not in this process's memory:
//
//	go run ./cmd/step1-race
//	go run -race ./cmd/step1-race
package main

import (
	"flag"
	"time"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/wallet"
)

func main() {
	n := flag.Int("n", 50, "how many requests spend at once")
	work := flag.Duration("work", 2*time.Millisecond, "the time between a spend's read and its write")
	s := step.Begin("step1-race") // -prefix, -json, Ctrl-C, the run's own keys
	ctx, rdb, balanceKey := s.Ctx, s.Redis, s.Key(wallet.BalanceKey)

	s.Must(rdb.Set(ctx, balanceKey, 100, 0).Err())
	// n requests try to spend 10 each from a balance of 100, all at once.
	t := wallet.Hammer(*n, func() (bool, error) {
		return wallet.Spend(ctx, rdb, balanceKey, 10, *work)
	})
	balance, err := rdb.Get(ctx, balanceKey).Int64()
	s.Check("race", "BROKEN", wallet.Check(100, 10, t, balance), err)
	s.End()
}
