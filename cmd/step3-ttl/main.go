// Step 3: work that outlives the lease, in three phases on a fresh balance
// of 100 each. Phase 1's numbers vary, the verdicts do not:
//
//	phase 1: accepted=3 balance=80 expected=70 BROKEN
//	phase 2: accepted=3 balance=70 expected=70 OK
//	phase 3: accepted=0 balance=100 expected=100 OK
//
//	go run ./cmd/step3-ttl
package main

import (
	"context"
	"flag"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

var (
	n    = flag.Int("n", 3, "how many requests spend at once")
	ttl  = flag.Duration("ttl", time.Second, "how long the lock lives unless renewed")
	work = flag.Duration("work", 1500*time.Millisecond, "the time between a spend's read and its write: longer than -ttl")

	s                   *step.Run
	balanceKey, lockKey string
)

func main() {
	s = step.Begin("step3-ttl") // -prefix, -json, Ctrl-C, the run's own keys
	ctx, rdb := s.Ctx, s.Redis
	balanceKey, lockKey = s.Key(wallet.BalanceKey), s.Key("lock:wallet:42")

	v, err := burst(ctx, rdb, false) // the lease expires mid-work: two holders at once
	s.Check("1", "BROKEN", v, err)
	v, err = burst(ctx, rdb, true) // a watchdog renews it
	s.Check("2", "OK", v, err)
	v, err = takenOver(ctx, rdb) // the lease is lost mid-work anyway
	s.Check("3", "OK", v, err)
	s.End()
}

// burst is phases 1 and 2: n requests at once, each holding the lock for
// its spend, with or without a watchdog.
func burst(ctx context.Context, rdb redis.UniversalClient, watchdog bool) (wallet.Verdict, error) {
	s.Must(rdb.Set(ctx, balanceKey, 100, 0).Err())
	t := wallet.Hammer(*n, func() (bool, error) { return spend(ctx, rdb, watchdog) })
	balance, err := rdb.Get(ctx, balanceKey).Int64()
	return wallet.Check(100, 10, t, balance), err
}

// spend is one request: take the lock, spend 10, give the lock back.
func spend(ctx context.Context, rdb redis.UniversalClient, watchdog bool) (bool, error) {
	l, err := lock.Acquire(ctx, rdb, lockKey, *ttl)
	if err != nil {
		return false, err
	}
	defer release(ctx, l)
	if !watchdog {
		return wallet.Spend(ctx, rdb, balanceKey, 10, *work)
	}
	watched, stop := l.Watch(ctx, *ttl) // renews every ttl/3, and is cancelled if that fails
	defer stop()
	return wallet.Spend(watched, rdb, balanceKey, 10, *work)
}

// takenOver is phase 3: a third into the work, another client writes its
// own token into the lock key, as if this holder had stalled past its TTL.
// The watchdog's next renewal finds it and stops the spend before it writes.
func takenOver(ctx context.Context, rdb redis.UniversalClient) (wallet.Verdict, error) {
	s.Must(rdb.Set(ctx, balanceKey, 100, 0).Err())
	l, err := lock.Acquire(ctx, rdb, lockKey, *ttl)
	if err != nil {
		return wallet.Verdict{}, err
	}
	watched, stop := l.Watch(ctx, *ttl)
	defer stop()
	other := time.AfterFunc(*work/3, func() { rdb.Set(ctx, lockKey, "another-holder", *ttl) })
	defer other.Stop()
	t := wallet.Hammer(1, func() (bool, error) { return wallet.Spend(watched, rdb, balanceKey, 10, *work) })
	release(ctx, l) // not held: the other client's token stays
	balance, err := rdb.Get(ctx, balanceKey).Int64()
	return wallet.Check(100, 10, t, balance), err
}

// release gives the lock back on a context Ctrl-C does not cancel: a
// release that never reached Redis would leave the lock for its whole TTL.
func release(ctx context.Context, l *lock.Lock) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := l.Release(rctx); err != nil {
		log.Println("release:", err)
	}
}
