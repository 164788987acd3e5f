// Step 4: the lock from a library, bsm/redislock v0.10.0, and what its
// retry strategy costs: step 2's fifty spenders once per strategy, each on
// a fresh balance. Expect three OK check lines, then a table whose figures
// move from run to run (jitter makes the fewest lock attempts, and
// exponential takes longer than lockstep: TestRun_strategiesKeepTheirOrder):
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
package main

import (
	"context"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/redislockx"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

const step = "step4-redislock"
const initial, amount = 100, 10 // each burst's balance, and each spend

func main() { harness.Main(run) } // run (flags.go): the flags, then redislockx.Compare

// The strategies compared, all three correct; what differs is the cost.
var strategies = []redislockx.Strategy{
	// Waiters that wake together collide again while the lock sits free
	// between wake-ups. lockstep and jitter both wait 10 ms on average, so
	// only the randomness differs; a hold lasts about 3 ms, so a waiter
	// that sleeps past a release leaves the lock idle.
	{Name: "lockstep", Retry: "LinearBackoff(10ms)", Fresh: func() redislock.RetryStrategy { return redislock.LinearBackoff(10 * time.Millisecond) }},
	// The floor redislock's docs advise, the cap four floors: larger caps
	// only wait longer.
	{Name: "exponential", Retry: "ExponentialBackoff(16ms, 64ms)", Fresh: func() redislock.RetryStrategy {
		return redislock.ExponentialBackoff(16*time.Millisecond, 64*time.Millisecond)
	}},
	{Name: "jitter", Retry: "lock.Jitter{5ms, 15ms}", Fresh: func() redislock.RetryStrategy { return lock.Jitter{} }}, // redislock has no random wait
}

// spend is every spender's turn, whatever the strategy st: obtain the lock
// with redislock, spend under step 3's watchdog, release. Compare runs one
// burst of them per strategy.
func (e *env) spend(ctx context.Context, rdb redis.UniversalClient, run *redislockx.Run, st redislockx.Strategy) (bool, error) {
	// Bound the wait: without a deadline redislock quietly stops
	// retrying once the TTL has passed.
	wctx, cancel := context.WithTimeout(ctx, e.wait)
	defer cancel()
	retry := &redislockx.CountingRetry{Strategy: st.Fresh()} // a fresh one per Obtain
	t0 := time.Now()
	l, err := redislockx.Obtain(wctx, rdb, e.lockKey, e.ttl, &redislock.Options{RetryStrategy: retry})
	run.Obtained(retry.Busy(), time.Since(t0), err)
	if err != nil {
		return false, err
	}
	// redislock has no watchdog: KeepAlive refreshes the lease and
	// cancels the spend if a refresh finds it gone.
	workCtx, stopWatch := lock.KeepAlive(ctx, e.ttl, redislockx.Refresh(l, e.ttl))
	ok, err := wallet.Spend(workCtx, rdb, e.balanceKey, amount, e.work)
	if err != nil && ctx.Err() == nil && workCtx.Err() != nil {
		err = fmt.Errorf("%w: %w", redislockx.ErrWatchdog, err) // not Ctrl-C: the watchdog
	}
	stopWatch()
	// Release even after Ctrl-C: a lease left behind would block the
	// next run for the rest of its TTL.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer rcancel()
	if rerr := l.Release(rctx); rerr != nil && err == nil && ctx.Err() == nil {
		run.ReleaseFailed(fmt.Errorf("lock: release %s: %w", e.lockKey, rerr)) // the spend counts
	}
	return ok, err
}
