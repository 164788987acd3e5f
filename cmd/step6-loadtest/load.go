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

	"example.com/walletlock/internal/step"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

// strategy is one way to spend (main.go's strategies).
type strategy struct {
	name, want string
	inPostgres bool // where the balance is
	spend      func(ctx context.Context, w account) (bool, error)
}

// account is one of the -wallets wallets: its keys in Redis, which the run
// deletes as it ends, and its row in PostgreSQL.
type account struct {
	balance, lock, fence string
	id                   int64
}

// accounts names the -wallets wallets: wallet:W:balance, lock:{wallet:W},
// fence:{wallet:W} and row W.
func accounts(s *step.Run) (all []account) {
	for w := range *wallets {
		k := func(f string) string { return s.Key(fmt.Sprintf(f, w)) }
		all = append(all, account{k("wallet:%d:balance"), k("lock:{wallet:%d}"), k("fence:{wallet:%d}"), s.ID(int64(w) + 1)})
	}
	return all
}

const initial = 1_000_000 // every wallet's starting balance: enough that no spend is refused

// run gives every wallet its starting balance, in Redis and in PostgreSQL,
// runs st's spends for -duration, and judges the balances where st keeps
// them.
func run(s *step.Run, store *postgres.Store, st strategy) (wallet.Verdict, time.Duration, []time.Duration, error) {
	ctx, rdb, accts := s.Ctx, s.Redis, accounts(s)
	for _, a := range accts {
		if err := rdb.Set(ctx, a.balance, initial, 0).Err(); err != nil {
			return wallet.Verdict{}, 0, nil, err
		}
		if err := store.Reset(ctx, a.id, initial); err != nil {
			return wallet.Verdict{}, 0, nil, err
		}
	}
	t, took, waits := load(ctx, st.spend, accts)
	var sum int64
	for _, a := range accts {
		balance, err := rdb.Get(ctx, a.balance).Int64()
		if st.inPostgres {
			balance, err = store.Balance(ctx, a.id)
		}
		if err != nil {
			return wallet.Verdict{}, 0, nil, err
		}
		sum += balance
	}
	return wallet.Check(initial*int64(len(accts)), 10, t, sum), took, waits, nil
}

// load runs spend in a loop from -workers goroutines for -duration, each
// spend on a wallet picked at random, and counts what the spends report.
// A spend's wait is the time it took beyond its own -work.
func load(ctx context.Context, spend func(context.Context, account) (bool, error), accts []account) (t wallet.Tally, took time.Duration, waits []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range *workers {
		wg.Go(func() {
			for time.Since(start) < *duration && ctx.Err() == nil {
				began := time.Now()
				ok, err := spend(ctx, accts[rand.IntN(len(accts))])
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
