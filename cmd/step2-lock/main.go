// Step 2: a lock built by hand, a lease on a Redis key.
//
// The fifty spenders of step 1 again, but each one now takes the wallet's
// lock before it reads and gives it back after it writes. lock.Acquire sets
// the lock key to a fresh random token only if the key does not exist, with
// a 2 s expiry so that a crashed holder cannot block the others for good
// (SET key token NX PX 2000), and retries every 5 to 15 ms while someone
// else holds it. Release compares the key's value with that token and
// deletes the key on a match, in one atomic step: a Lua script, or DELEX on Redis 8.4 and later. The
// burst becomes a queue: ten spends go through, forty find the money gone.
//
// Expect, on every run:
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
//
// It exits 0 when the check line says OK and no lock is left behind, 1 when
// not or when Redis fails, 2 on bad flags, and 130 after Ctrl-C, once it
// has printed what it measured and deleted its keys.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	step    = "step2-lock"
	initial = 100 // starting balance
	amount  = 10  // each spend
)

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step2:", stdout, stderr).WithProcs()
	release := h.Flags.String("release", "auto", "how Release deletes the key: lua, delex (Redis 8.4+) or auto")
	n := h.Flags.Int("n", 50, fmt.Sprintf("concurrent spenders, at most %d", harness.MaxN))
	ttl := h.Flags.Duration("ttl", 2*time.Second, "lock TTL, at least 1ms and at most 1h")
	wait := h.Flags.Duration("wait", 5*time.Second, "how long each spender waits for the lock, at most 1h")
	work := h.Flags.Duration("work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	if code, ok := h.Parse(args, func() int { return *n }, func() []error { return checks(*release, *n, *ttl, *wait, *work) }); !ok {
		return code
	}
	balanceKey, lockKey := wallet.BalanceKey(h.Prefix(), wallet.DemoWallet), wallet.LockKey(h.Prefix(), wallet.DemoWallet)

	// The lesson: fifty spenders, each holding the lock for its spend.
	return h.Spenders(ctx, *n, 0, "lock", []string{balanceKey, lockKey}, func(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
		// Ask now how Release will delete the key on this server, so that
		// -release delex on an older Redis stops before anything runs.
		version, method, err := releaseMethod(ctx, r, *release)
		if err != nil {
			return harness.Outcome{}, err
		}
		tally, verdict, err := r.Hammer(ctx, balanceKey, initial, amount, []string{lockKey}, func(ctx context.Context) (bool, error) {
			actx, cancel := context.WithTimeout(ctx, *wait)
			l, err := lock.Acquire(actx, r.Redis, lockKey, *ttl) // SET lockKey token NX PX ttl, retried
			cancel()
			if err != nil {
				return false, err
			}
			ok, err := wallet.Spend(ctx, r.Redis, balanceKey, amount, *work)
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
		return outcome(r, tally, verdict, *n, lockKey, fmt.Sprintf("released with %s, Redis %s", method, version))
	})
}
