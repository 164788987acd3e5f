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
//	lockstep:    accepted=10 balance=0 expected=0 OK
//	exponential: accepted=10 balance=0 expected=0 OK
//	jitter:      accepted=10 balance=0 expected=0 OK
//
// Run it with:
//
//	go run ./cmd/step4-redislock
//	go run ./cmd/step4-redislock -strategy jitter -json
//	go run ./cmd/step4-redislock -ttl 0    # refused: lock: TTL must be at least 1ms
//
// It exits 0 when every check says OK, 1 when one does not or a spend,
// a release or Redis failed, 2 on bad flags, and 130 after Ctrl-C, once it
// has printed what it measured and deleted its keys.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/bsm/redislock"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/redislockx"
	"example.com/walletlock/internal/retrycost"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	step    = "step4-redislock"
	initial = 100 // starting balance
	amount  = 10  // each spend
)

// The strategies compared. lockstep and jitter both wait 10 ms on average,
// so only the randomness differs; a hold lasts about 3 ms, so a waiter that
// sleeps past a release leaves the lock idle. exponential's floor is the
// one redislock's docs advise, its cap four floors: larger caps only wait
// longer.
var strategies = []retrycost.Strategy{
	{Name: "lockstep", Retry: "LinearBackoff(10ms)", Fresh: func() redislock.RetryStrategy { return redislock.LinearBackoff(10 * time.Millisecond) }},
	{Name: "exponential", Retry: "ExponentialBackoff(16ms, 64ms)", Fresh: func() redislock.RetryStrategy {
		return redislock.ExponentialBackoff(16*time.Millisecond, 64*time.Millisecond)
	}},
	{Name: "jitter", Retry: "lock.Jitter{5ms, 15ms}", Fresh: func() redislock.RetryStrategy { return lock.Jitter{} }}, // redislock has no random wait
}

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	which := fs.String("strategy", "all", "lockstep, exponential, jitter or all")
	var c retrycost.Setting
	fs.IntVar(&c.N, "n", 50, fmt.Sprintf("concurrent spenders, at most %d", harness.MaxN))
	fs.DurationVar(&c.Work, "work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	fs.DurationVar(&c.TTL, "ttl", 2*time.Second, "lock TTL, at least 1ms and at most 1h")
	fs.DurationVar(&c.Wait, "wait", 10*time.Second, "how long each spender waits for the lock, at most 1h")
	fs.StringVar(&c.Prefix, "prefix", wallet.DefaultPrefix+"step4:", "prefix of the Redis keys this run writes; one run at a time per prefix")
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	chosen, unknown := retrycost.Pick(strategies, *which)
	if code, stop := harness.Refuse(fs, stderr, unknown, c.Check()); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, step+":", retrycost.OneLine(err)); return 1 }

	rdb, err := services.Connect(ctx)
	if err != nil {
		return fail(err)
	}
	defer rdb.Close()
	balanceKey, lockKey := wallet.BalanceKey(c.Prefix, wallet.DemoWallet), wallet.LockKey(c.Prefix, wallet.DemoWallet)
	// The run owns its prefix: a second run on it is refused, not mixed in.
	s, err := harness.Start(ctx, rdb, step, c.Prefix)
	if err != nil {
		return fail(err)
	}
	defer s.Close(stderr, balanceKey, lockKey)
	ctx = s.Context() // ends at Ctrl-C

	// Every spender obtains the lock with redislock, spends under
	// step 3's watchdog, and releases.
	spend := func(run *retrycost.Run, st retrycost.Strategy) (bool, error) {
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
			err = fmt.Errorf("%w: %w", retrycost.ErrWatchdog, err) // not Ctrl-C: the watchdog
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
	}

	r := harness.NewReport(step)
	b := retrycost.Bench{Setting: c, Step: step, Session: s, Redis: rdb, BalanceKey: balanceKey, LockKey: lockKey, Initial: initial, Amount: amount}
	for _, st := range chosen {
		run, balance, err := b.Burst(st, func(run *retrycost.Run) (bool, error) { return spend(run, st) })
		if err != nil {
			return fail(err)
		}
		if run == nil {
			break // Ctrl-C, and nothing left to check
		}
		run.Verdict = wallet.CheckUnknown(initial, amount, run.Tally.Accepted, run.Tally.Unknown, balance)
		if !*asJSON {
			run.PrintCheck(stdout)
		}
		if err := run.Problem(); err != nil {
			r.Fail(stderr, err)
		}
		if run.Cut {
			break // measured, but not what the lesson is about: b.Report says so
		}
		r.Add(st.Name, run.Verdict, nil)
	}
	b.Report(r, stdout, stderr, *asJSON)
	return r.Finish(stdout, stderr, *asJSON)
}
