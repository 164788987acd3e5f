// Step 6: every way to spend the steps built (a spend of 10 from wallet w)
// side by side under one load; only none ends BROKEN, the figures vary:
//
//	go run ./cmd/step6-loadtest   # -workers 64 -wallets 1: one hot wallet
package main

import (
	"context"
	"flag"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

var (
	workers  = flag.Int("workers", 16, "how many requests spend at once, in a loop")
	wallets  = flag.Int("wallets", 4, "how many wallets they spend from, each picked at random")
	duration = flag.Duration("duration", 2*time.Second, "how long each strategy runs")
	work     = flag.Duration("work", time.Millisecond, "the time between a spend's read and its write")
)

// strategies are the ways to spend 10 from wallet w, each the code of its
// step: name, wanted verdict, balance in PostgreSQL (or Redis), spend.
func strategies(rdb redis.UniversalClient, store *postgres.Store) []strategy {
	const ttl = 2 * time.Second // every lease's
	return []strategy{
		{"none", "BROKEN", false, func(ctx context.Context, w account) (bool, error) { // step 1
			return wallet.Spend(ctx, rdb, w.balance, 10, *work)
		}},
		{"lock", "OK", false, func(ctx context.Context, w account) (bool, error) { // step 2
			l, err := lock.Acquire(ctx, rdb, w.lock, ttl)
			if err != nil {
				return false, err
			}
			defer release(ctx, l.Release)
			return wallet.Spend(ctx, rdb, w.balance, 10, *work)
		}},
		{"redislock", "OK", false, func(ctx context.Context, w account) (bool, error) { // step 4
			l, err := redislock.Obtain(ctx, rdb, w.lock, ttl, &redislock.Options{RetryStrategy: jitter{}})
			if err != nil {
				return false, err
			}
			defer release(ctx, l.Release)
			return wallet.Spend(ctx, rdb, w.balance, 10, *work)
		}},
		{"fenced", "OK", true, func(ctx context.Context, w account) (bool, error) { // step 5
			l, err := lock.AcquireFenced(ctx, rdb, w.lock, w.fence, ttl)
			if err != nil {
				return false, err
			}
			defer release(ctx, l.Release)
			return store.SpendFenced(ctx, w.id, l.Fence, 10, *work) // Claim, then WriteFenced
		}},
		{"version", "OK", true, func(ctx context.Context, w account) (bool, error) { // step 5, phase 3
			return store.SpendVersioned(ctx, w.id, 10, *work)
		}},
		{"atomic", "OK", false, func(ctx context.Context, w account) (bool, error) { // no lock: the work, then one script
			if err := wallet.Work(ctx, *work); err != nil {
				return false, err
			}
			taken, err := spendScript.Run(ctx, rdb, []string{w.balance}, 10).Int()
			if err != nil {
				err = wallet.WriteError(w.balance, err) // no reply: it may have taken
			}
			return taken == 1, err
		}},
		{"forupdate", "OK", true, func(ctx context.Context, w account) (bool, error) { // PostgreSQL's own row lock
			return store.SpendForUpdate(ctx, w.id, 10, *work)
		}},
	}
}

// spendScript takes ARGV[1] from KEYS[1] if it covers it: check and write as one.
var spendScript = redis.NewScript(`
if tonumber(redis.call("GET", KEYS[1])) < tonumber(ARGV[1]) then return 0 end
redis.call("DECRBY", KEYS[1], ARGV[1])
return 1`)

func main() {
	s := step.Begin("step6-loadtest") // -prefix, -json, Ctrl-C, the run's own keys and rows
	pool, err := postgres.Connect(s.Ctx)
	s.Must(err)
	store, err := postgres.Open(s.Ctx, pool, s.Owner)
	s.Must(err)
	s.AtEnd(store.Clear)
	var rows []row
	for _, st := range strategies(s.Redis, store) {
		v, took, waits, err := run(s, store, st) // set the wallets up, spend for -duration, add up
		s.Check(st.name, st.want, v, err)
		rows = append(rows, newRow(st.name, v, took, waits))
	}
	s.Table("strategies", rows)
	s.End()
}
