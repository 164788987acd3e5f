// Step 2: a lease built by hand. Step 1's fifty requests, each taking the
// wallet's lock before its read and giving it back after its write: ten
// spends go through and the balance ends at zero, on every run.
//
//	go run ./cmd/step2-lock
package main

import (
	"context"
	"flag"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

var (
	n    = flag.Int("n", 50, "how many requests spend at once")
	ttl  = flag.Duration("ttl", 2*time.Second, "how long the lock lives unless released")
	wait = flag.Duration("wait", 5*time.Second, "how long a request waits for the lock")
	work = flag.Duration("work", 2*time.Millisecond, "the time between a spend's read and its write")
)

func main() {
	s := step.Begin("step2-lock") // -prefix, -json, Ctrl-C, the run's own keys
	ctx, rdb := s.Ctx, s.Redis
	balanceKey, lockKey := s.Key(wallet.BalanceKey), s.Key("lock:wallet:42")

	s.Must(rdb.Set(ctx, balanceKey, 100, 0).Err())
	t := wallet.Hammer(*n, func() (bool, error) { return spend(ctx, rdb, balanceKey, lockKey) })
	balance, err := rdb.Get(ctx, balanceKey).Int64()
	s.Check("lock", "OK", wallet.Check(100, 10, t, balance), err)
	s.End()
}

// spend is one request: take the lock, spend 10, give the lock back.
func spend(ctx context.Context, rdb redis.UniversalClient, balanceKey, lockKey string) (bool, error) {
	actx, cancel := context.WithTimeout(ctx, *wait) // give up on the lock after -wait
	defer cancel()
	l, err := lock.Acquire(actx, rdb, lockKey, *ttl)
	if err != nil {
		return false, err
	}
	// Released on a context of its own: one that Ctrl-C had cancelled
	// would never reach Redis, and the lock would stay for its whole TTL.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		l.Release(rctx)
	}()
	return wallet.Spend(ctx, rdb, balanceKey, 10, *work)
}
