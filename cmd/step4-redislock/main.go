// Step 4: step 2's lock from a library, bsm/redislock v0.10.0, and what
// its retry strategy costs: the fifty requests once per strategy. Three
// OK lines, then a table whose figures vary from run to run.
//
//	go run ./cmd/step4-redislock
package main

import (
	"context"
	"flag"
	"log"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/wallet"
)

var (
	n    = flag.Int("n", 50, "how many requests spend at once")
	ttl  = flag.Duration("ttl", 2*time.Second, "how long the lock lives unless released")
	wait = flag.Duration("wait", 5*time.Second, "how long a request waits for the lock")
	work = flag.Duration("work", 2*time.Millisecond, "the time between a spend's read and its write")
)

// The retry strategies: how long a waiter sleeps before it asks again. Each
// Obtain gets a new one, for a strategy may count its calls.
var strategies = []struct {
	name string
	new  func() redislock.RetryStrategy
}{
	{"lockstep", func() redislock.RetryStrategy { return redislock.LinearBackoff(10 * time.Millisecond) }}, // the same 10ms every time
	{"exponential", func() redislock.RetryStrategy { // 16ms, then doubling up to 64ms
		return redislock.ExponentialBackoff(16*time.Millisecond, 64*time.Millisecond)
	}},
	{"jitter", func() redislock.RetryStrategy { return jitter{} }}, // 5 to 15ms at random: redislock has none
}

type jitter struct{}

func (jitter) NextBackoff() time.Duration { return 5*time.Millisecond + rand.N(10*time.Millisecond) }

func main() {
	s := step.Begin("step4-redislock") // -prefix, -json, Ctrl-C, the run's own keys
	ctx, rdb := s.Ctx, s.Redis
	balanceKey, lockKey := s.Key(wallet.BalanceKey), s.Key("lock:wallet:42")

	var rows []row
	for _, st := range strategies {
		s.Must(rdb.Set(ctx, balanceKey, 100, 0).Err())
		var retries atomic.Int64
		start := time.Now()
		t := wallet.Hammer(*n, func() (bool, error) {
			return spend(ctx, rdb, balanceKey, lockKey, counted{st.new(), &retries})
		})
		rows = append(rows, row{st.name, retries.Load(), float64(time.Since(start).Milliseconds()) / 1000})
		balance, err := rdb.Get(ctx, balanceKey).Int64()
		s.Check(st.name, "OK", wallet.Check(100, 10, t, balance), err)
	}
	s.Table("strategies", rows)
	s.End()
}

// spend is one request: obtain the lock with redislock, spend, release.
func spend(ctx context.Context, rdb redis.UniversalClient, balanceKey, lockKey string, retry redislock.RetryStrategy) (bool, error) {
	// Without a deadline of ours, redislock stops retrying after one TTL.
	octx, cancel := context.WithTimeout(ctx, *wait)
	defer cancel()
	l, err := redislock.Obtain(octx, rdb, lockKey, *ttl, &redislock.Options{RetryStrategy: retry})
	if err != nil {
		return false, err
	}
	defer func() { // on a context Ctrl-C does not cancel, as in step 2
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := l.Release(rctx); err != nil {
			log.Println("release:", err)
		}
	}()
	return wallet.Spend(ctx, rdb, balanceKey, 10, *work)
}

// counted counts how often its strategy lets a waiter ask again.
type counted struct {
	redislock.RetryStrategy
	retries *atomic.Int64
}

func (c counted) NextBackoff() time.Duration { c.retries.Add(1); return c.RetryStrategy.NextBackoff() }

type row struct {
	Strategy string  `json:"strategy"`
	Retries  int64   `json:"retries"` // all waiters' tries after their first
	Seconds  float64 `json:"seconds"` // from the first request's start to the last one's end
}
