package judge

// The failover and the partition come from the drill (internal/drill):
// its servers, Sentinels, network namespaces and spender processes, with
// the lock under judgement in the spenders (its custom strategies).

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/drill"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/ledger"
)

// drillLockEnv names the adapter a drill spender of the judge uses.
const drillLockEnv = "WALLETLOCK_JUDGE_LOCK"

// drillSpender is a drill spender process that takes its lock through
// the adapter drillLockEnv names.
func drillSpender(c drill.SpenderConfig, adapters []Adapter) int {
	name := os.Getenv(drillLockEnv)
	var a *Adapter
	for i := range adapters {
		if adapters[i].Name == name {
			a = &adapters[i]
		}
	}
	if a == nil {
		fmt.Fprintf(os.Stderr, "judge spender: no lock named %q in this program\n", name)
		return 2
	}
	var (
		once sync.Once
		lk   Lock
		err  error
	)
	drill.CustomLock = func(ctx context.Context, rdb redis.UniversalClient, key string, ttl time.Duration, fenced bool) (string, int64, func(context.Context), error) {
		once.Do(func() {
			client, ok := rdb.(*redis.Client)
			if !ok {
				err = fmt.Errorf("judge: the drill's client is a %T", rdb)
				return
			}
			lk, err = a.New(Redis{client: client})
		})
		if err != nil {
			return "", 0, nil, err
		}
		var l Lease
		var aerr error
		if fl, ok := lk.(FencedLock); ok && fenced {
			l, aerr = fl.AcquireFenced(ctx, key, ttl)
		} else {
			l, aerr = lk.Acquire(ctx, key, ttl)
		}
		if aerr != nil {
			return "", 0, nil, aerr
		}
		var fence int64
		if f, ok := l.(Fencer); ok && fenced {
			fence = f.Fence()
		}
		return strings.ToLower(rand.Text()[:12]), fence, func(ctx context.Context) { l.Release(ctx) }, nil
	}
	return drill.RunSpender(c, os.Stdin, os.Stdout, os.Stderr)
}

// drillFault judges the lock under one of the drill's nemeses: three
// spender processes of two goroutines each spend from two wallets while
// the fault strikes; the money must be right.
func drillFault(nemesis, what string) func(c *check) (Outcome, string) {
	return func(c *check) (Outcome, string) {
		if drill.IsPartition(nemesis) {
			if err := drill.CanPartition(); err != nil {
				return Unknown, "not run: " + err.Error()
			}
		}
		ctx := c.ctx
		pool, err := env.ConnectPostgres(ctx)
		if err != nil {
			return Unknown, "PostgreSQL: " + err.Error()
		}
		defer pool.Close()
		prefix := "judge-drill:"
		store, err := ledger.Open(ctx, pool, prefix)
		if err != nil {
			return Unknown, "PostgreSQL: " + err.Error()
		}
		// One prefix for every judge: a judge killed mid-partition leaves
		// network namespaces named after it, which the next one's drill
		// removes (drill.MakeNet), and rows, which TakeOver deletes. Two
		// judges at once: the second's drill is refused (unknown).
		release, err := drill.TakePrefix(ctx, pool, prefix)
		if err != nil {
			return Unknown, err.Error()
		}
		defer release()
		if _, err := drill.TakeOver(ctx, pool, prefix, drill.FirstID(prefix), 2); err != nil {
			return Unknown, err.Error()
		}
		fenced := c.r.claims["fence"]
		strategy := drill.CustomLease
		if fenced {
			strategy = drill.CustomFenced
		}
		os.Setenv(drillLockEnv, c.r.adapter.Name)
		dc := drill.Config{Nemesis: nemesis, Strategy: strategy, Seed: c.r.c.Seed, Exe: c.r.exe,
			Procs: 3, Conc: 2, Wallets: 2, Initial: 1_000_000, Amount: 7, TTL: 500 * time.Millisecond, Work: 10 * time.Millisecond,
			Prefix: prefix, First: drill.FirstID(prefix), Store: store, Dir: c.r.dir, Partition: drill.DefaultPartition}
		res, err := drill.Run(ctx, c.r.procs, dc)
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		dc.Store.DeleteRange(cctx, dc.First, dc.Wallets)
		cancel()
		if err != nil {
			return Unknown, "the drill failed: " + err.Error()
		}
		story := fmt.Sprintf("%s: %s; %d double grants", res.Note, res.Check, res.DoubleGrants)
		switch {
		case res.OK && fenced:
			return Pass, story + ", and PostgreSQL's fence check kept the money right"
		case res.OK:
			return Pass, story + "; this run lost no money, though a lease without a fence can under " + what
		case fenced:
			return Fail, story + ": money lost with fences checked"
		}
		return Broken, "a lease without a fence does not survive " + what + ": " + story
	}
}
