// Step 4: the lock from a library, bsm/redislock v0.10.0, and what its
// retry strategy costs.
//
// Step 2's fifty spenders (balance 100, 10 each, 2 ms of work) run once per
// retry strategy, each on a fresh balance. All three are correct; what
// differs is the cost. Waiters that wake together collide again while the
// lock sits free between wake-ups; random waits spread them out. Expect
// three OK check lines, then a table whose figures move from run to run.
// Two orderings do not move, and TestRun_strategiesKeepTheirOrder holds
// them: jitter makes the fewest lock attempts, and exponential takes
// longer than lockstep.
//
//	lockstep:    accepted=10 balance=0 expected=0 OK linearizable=yes
//	exponential: accepted=10 balance=0 expected=0 OK linearizable=yes
//	jitter:      accepted=10 balance=0 expected=0 OK linearizable=yes
//
// Run it with:
//
//	go run ./cmd/step4-redislock
//	go run ./cmd/step4-redislock -strategy jitter -json
//	go run ./cmd/step4-redislock -ttl 0    # refused: lock: TTL must be at least 1ms
//
// It exits 0 when every check says OK, 1 when one does not or a spend, a
// release or Redis failed, 2 on bad flags, and 130 after Ctrl-C, once it
// has printed what it measured and deleted its keys.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/redislockx"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	step    = "step4-redislock"
	initial = 100 // starting balance
	amount  = 10  // each spend
)

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step4:", stdout, stderr)
	which := h.Flags.String("strategy", "all", "lockstep, exponential, jitter or all")
	var c redislockx.Setting
	h.Flags.IntVar(&c.N, "n", 50, fmt.Sprintf("concurrent spenders, at most %d", harness.MaxN))
	h.Flags.DurationVar(&c.Work, "work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	h.Flags.DurationVar(&c.TTL, "ttl", 2*time.Second, "lock TTL, at least 1ms and at most 1h")
	h.Flags.DurationVar(&c.Wait, "wait", 10*time.Second, "how long each spender waits for the lock, at most 1h")
	var chosen []redislockx.Strategy
	if code, ok := h.Parse(args, nil, func() []error { return choose(&chosen, *which, c) }); !ok {
		return code
	}
	c.Prefix = h.Prefix()
	balanceKey, lockKey := wallet.BalanceKey(c.Prefix, wallet.DemoWallet), wallet.LockKey(c.Prefix, wallet.DemoWallet)

	// The lesson: every spender obtains the lock with redislock, spends
	// under step 3's watchdog, and releases; one burst per strategy.
	return redislockx.Compare(ctx, h, c, balanceKey, lockKey, initial, amount, chosen, func(ctx context.Context, rdb redis.UniversalClient, run *redislockx.Run, st redislockx.Strategy) (bool, error) {
		// Bound the wait: without a deadline redislock quietly stops
		// retrying once the TTL has passed.
		wctx, cancel := context.WithTimeout(ctx, c.Wait)
		defer cancel()
		retry := &redislockx.CountingRetry{Strategy: st.Fresh()} // a fresh one per Obtain
		t0 := time.Now()
		l, err := redislockx.Obtain(wctx, rdb, lockKey, c.TTL, &redislock.Options{RetryStrategy: retry})
		run.Obtained(retry.Busy(), time.Since(t0), err)
		if err != nil {
			return false, err
		}
		// redislock has no watchdog: KeepAlive refreshes the lease and
		// cancels the spend if a refresh finds it gone.
		workCtx, stopWatch := lock.KeepAlive(ctx, c.TTL, redislockx.Refresh(l, c.TTL))
		ok, err := wallet.Spend(workCtx, rdb, balanceKey, amount, c.Work)
		if err != nil && ctx.Err() == nil && workCtx.Err() != nil {
			err = fmt.Errorf("%w: %w", redislockx.ErrWatchdog, err) // not Ctrl-C: the watchdog
		}
		stopWatch()
		// Release even after Ctrl-C: a lease left behind would block the
		// next run for the rest of its TTL.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer rcancel()
		if rerr := l.Release(rctx); rerr != nil && err == nil && ctx.Err() == nil {
			run.ReleaseFailed(fmt.Errorf("lock: release %s: %w", lockKey, rerr)) // the spend counts
		}
		return ok, err
	})
}
