package main

// The load around the strategies: setting the wallets up, the loop that
// spends for -duration, adding the balances up and the table's row.

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

var (
	s     *step.Run
	rdb   redis.UniversalClient
	store *postgres.Store
	keys  []struct{ balance, lock, fence string } // wallet w's, in Redis
)

// get is v, unless err ends the run (Redis or PostgreSQL failed it).
func get[T any](v T, err error) T { s.Must(err); return v }

// walletKeys names the keys of the -wallets wallets, which the run deletes as it ends.
func walletKeys() (keys []struct{ balance, lock, fence string }) {
	for w := range *wallets {
		k := func(f string) string { return s.Key(fmt.Sprintf(f, w)) }
		keys = append(keys, struct{ balance, lock, fence string }{k("wallet:%d:balance"), k("lock:{wallet:%d}"), k("fence:{wallet:%d}")})
	}
	return keys
}

const ttl = 2 * time.Second // every lease's

const initial = 1_000_000 // every wallet's starting balance: enough that no spend is refused

// fill gives every wallet its starting balance, in Redis and in PostgreSQL.
func fill(ctx context.Context) error {
	for w, k := range keys {
		if err := rdb.Set(ctx, k.balance, initial, 0).Err(); err != nil {
			return err
		}
		if err := store.Reset(ctx, id(w), initial); err != nil {
			return err
		}
	}
	return nil
}

// total adds up the wallets' balances where the strategy keeps them.
func total(ctx context.Context, inPostgres bool) (int64, error) {
	var sum int64
	for w, k := range keys {
		balance, err := rdb.Get(ctx, k.balance).Int64()
		if inPostgres {
			balance, err = store.Balance(ctx, id(w))
		}
		if err != nil {
			return 0, err
		}
		sum += balance
	}
	return sum, nil
}

// id is wallet w's row in PostgreSQL.
func id(w int) int64 { return s.ID(int64(w) + 1) }

// load runs spend in a loop from -workers goroutines for -duration, each
// spend on a wallet picked at random, and counts what the spends report.
// A spend's wait is the time it took beyond its own -work.
func load(ctx context.Context, spend func(context.Context, int) (bool, error)) (t wallet.Tally, took time.Duration, waits []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range *workers {
		wg.Go(func() {
			for time.Since(start) < *duration && ctx.Err() == nil {
				began := time.Now()
				ok, err := spend(ctx, rand.IntN(*wallets))
				mu.Lock()
				t.Add(ok, err)
				waits = append(waits, max(time.Since(began)-*work, 0))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return t, time.Since(start), waits
}

// release gives a lease back on a context that Ctrl-C does not cancel.
func release(ctx context.Context, giveBack func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if err := giveBack(ctx); err != nil {
		log.Println("release:", err)
	}
}

// jitter is redislock's retry: wait 5 to 15 ms at random (step 4).
type jitter struct{}

func (jitter) NextBackoff() time.Duration { return 5*time.Millisecond + rand.N(10*time.Millisecond) }

// row is one strategy in the table.
type row struct {
	Strategy  string  `json:"strategy"`
	PerSecond float64 `json:"accepted_per_second"`
	WaitP50   float64 `json:"wait_p50_ms"`
	WaitP99   float64 `json:"wait_p99_ms"`
	Verdict   string  `json:"verdict"`
}

func newRow(name string, v wallet.Verdict, took time.Duration, waits []time.Duration) row {
	slices.Sort(waits)
	ms := func(q int) float64 {
		if len(waits) == 0 {
			return 0
		}
		return float64(waits[len(waits)*q/100].Microseconds()/10) / 100
	}
	r := row{name, float64(int(float64(v.Accepted) / took.Seconds())), ms(50), ms(99), "BROKEN"}
	if v.OK {
		r.Verdict = "OK"
	}
	return r
}
