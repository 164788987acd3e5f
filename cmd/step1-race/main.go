// Step 1: the lost update. Fifty requests spend 10 each from a balance of
// 100 at once, with nothing to keep them apart: BROKEN on every run, and
// -race finds nothing, for what they share is in Redis, not in memory.
//
//	go run ./cmd/step1-race
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
