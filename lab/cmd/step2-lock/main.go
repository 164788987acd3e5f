// Step 2: a lock built by hand, a lease on a Redis key.
//
// Step 1's fifty spenders, each now holding the wallet's lock from its
// read to its write: ten spends go through. Expect, on every run:
//
//	accepted=10 balance=0 expected=0 OK linearizable=yes
//	lock key left behind: no (released with lua, Redis 7.0.15)
//
// Run it with:
//
//	go run ./cmd/step2-lock
//	go run ./cmd/step2-lock -release delex  # needs Redis 8.4 or later
//	go run ./cmd/step2-lock -ttl 0          # refused: lock: TTL must be at least 1ms
//	go run ./cmd/step2-lock -procs 4        # the spenders in 4 processes: still OK
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

const step = "step2-lock"
const initial, amount = 100, 10 // the starting balance, and each spend

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step2:", stdout, stderr).WithProcs()
	release := h.Flags.String("release", "auto", "how Release deletes the key: lua, delex (Redis 8.4+) or auto")
	f := h.AddLockFlags(harness.LockFlags{N: 50, TTL: 2 * time.Second, Wait: 5 * time.Second, Work: 2 * time.Millisecond})
	if code, ok := h.Parse(args, func() int { return f.N }, func() []error { return append([]error{checkRelease(*release)}, f.Check(lock.CheckTTL)...) }); !ok {
		return code
	}
	balanceKey, lockKey := wallet.BalanceKey(h.Prefix(), wallet.DemoWallet), wallet.LockKey(h.Prefix(), wallet.DemoWallet)

	// The lesson: fifty spenders, each holding the lock for its spend.
	return h.Spenders(ctx, f.N, 0, "lock", []string{balanceKey, lockKey}, func(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
		// Ask now how Release will delete the key on this server, so that
		// -release delex on an older Redis stops before anything runs.
		version, method, err := releaseMethod(ctx, r, *release)
		if err != nil {
			return harness.Outcome{}, err
		}
		tally, verdict, err := r.Hammer(ctx, balanceKey, initial, amount, []string{lockKey}, func(ctx context.Context) (bool, error) {
			actx, cancel := context.WithTimeout(ctx, f.Wait)
			l, err := lock.Acquire(actx, r.Redis, lockKey, f.TTL) // SET lockKey token NX PX ttl, retried
			cancel()
			if err != nil {
				return false, err
			}
			ok, err := wallet.Spend(ctx, r.Redis, balanceKey, amount, f.Work)
			// Release runs even after Ctrl-C: a lease left behind would
			// block everyone for the rest of its TTL. It sends DELEX where
			// the server has it; ReleaseLua always runs the script.
			giveBack := l.Release
			if *release == "lua" {
				giveBack = l.ReleaseLua
			}
			if rerr := giveBack(ctx); rerr != nil {
				r.Also.Add(rerr)
			}
			return ok, err
		})
		if err != nil {
			return harness.Outcome{}, err
		}
		r.Report.Set("redis_version", version)
		r.Report.Set("release", method) // what releases used: lua or delex
		// After the spenders, no lock key may be left behind.
		return outcome(r, tally, verdict, f.N, lockKey, fmt.Sprintf("released with %s, Redis %s", method, version))
	})
}

// releaseMethod asks the server its version and how Release will delete
// the lock key there, from the answer Release itself goes by
// (lock.HasDelex, asked once per client).
func releaseMethod(ctx context.Context, r *harness.Run, release string) (version, method string, err error) {
	if version, err = services.RedisVersion(ctx, r.Redis); err != nil {
		return "", "", err
	}
	delex, err := lock.HasDelex(ctx, r.Redis)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("ask whether Redis has DELEX: %w", err)
	case release == "delex" && !delex:
		return "", "", fmt.Errorf("-release delex needs Redis 8.4 or later, this server is Redis %s; use -release lua or auto", version)
	case delex && release != "lua":
		return version, "delex", nil // DELEX key IFEQ token: the script's compare-and-delete in one command
	}
	return version, "lua", nil // release.lua: GET, compare, DEL
}
