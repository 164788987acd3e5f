// Step 4: the lock from a library, bsm/redislock v0.10.0, and what its
// retry strategy costs.
//
// The same fifty spenders as step 2 (balance 100, 10 each, 2 ms of work),
// run once per retry strategy, each on a fresh balance:
//
//	lockstep     LinearBackoff: every waiter retries at the same moments
//	exponential  ExponentialBackoff: waits double from a floor up to a cap
//	jitter       lock.Jitter: a random wait in a range (redislock has none)
//
// Each prints its check line, which must say OK, then one table compares
// them. Every spender takes the lock, even those that then find the money
// gone, so 5 attempts per accepted spend is the floor. One run on a busy
// 2-core machine with Redis 7.0 (the numbers move from run to run; the
// order usually does not):
//
//	lockstep:    accepted=10 balance=0 expected=0 OK
//	exponential: accepted=10 balance=0 expected=0 OK
//	jitter:      accepted=10 balance=0 expected=0 OK
//
//	strategy     retry                               wall  attempts/spend  wait p50  wait p99  commands/spend  errors
//	lockstep     LinearBackoff(10ms)              291.6ms            58.5   148.9ms   285.8ms           196.5       0
//	exponential  ExponentialBackoff(16ms, 64ms)  2030.1ms            85.6   886.3ms  2028.2ms           453.8       0
//	jitter       lock.Jitter{5ms, 15ms}           118.8ms            32.5    61.4ms   117.4ms           154.4       0
//
// Waiters that wake together collide again: each wake-up lets one of them
// in and sends the others back to sleep, while the lock sits free between
// wake-ups. Exponential backoff without randomness keeps them together and
// only sleeps longer. Random waits spread them out.
//
// What redislock leaves to its caller is handled in redislockx.Obtain
// (TTL check, one-line errors) and below: a deadline on every wait, a
// fresh strategy per Obtain, a watchdog, errors told apart (errorKind).
//
// Run it with:
//
//	go run ./cmd/step4-redislock
//	go run ./cmd/step4-redislock -strategy jitter -json
//	go run ./cmd/step4-redislock -ttl 0    # refused: lock: TTL must be at least 1ms
//
// One run at a time per -prefix (cli.Session): a second one is refused
// instead of resetting the first one's balance. Ctrl-C stops the spenders,
// prints what was measured, deletes the keys within cli.CleanupTimeout
// even when Redis is frozen, names any it could not delete with the
// command that does, and exits 130.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/redislockx"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const step = "step4-redislock"

// A strategy makes a fresh RetryStrategy for every Obtain: redislock's
// ExponentialBackoff counts its retries inside the value, so one value
// shared by fifty goroutines would hand each a wait that depends on how
// often the others retried.
type strategy struct {
	name, retry string
	fresh       func() redislock.RetryStrategy
}

// lockstep and jitter both wait 10 ms on average, so only the randomness
// differs. A hold lasts about 3 ms here: every millisecond a waiter sleeps
// past a release leaves the lock idle.
var strategies = []strategy{
	{"lockstep", "LinearBackoff(10ms)", func() redislock.RetryStrategy {
		return redislock.LinearBackoff(10 * time.Millisecond)
	}},
	// The floor is the one redislock's docs advise, the cap four floors.
	// Caps of 128 or 256 ms made this run two to four times slower still:
	// this is the kindest setting we tried for exponential.
	{"exponential", "ExponentialBackoff(16ms, 64ms)", func() redislock.RetryStrategy {
		return redislock.ExponentialBackoff(16*time.Millisecond, 64*time.Millisecond)
	}},
	{"jitter", "lock.Jitter{5ms, 15ms}", func() redislock.RetryStrategy {
		return lock.Jitter{} // 5 to 15 ms, as lock.Acquire waits
	}},
}

const (
	initial = 100 // starting balance
	amount  = 10  // each spend
)

func main() { cli.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	which := fs.String("strategy", "all", "lockstep, exponential, jitter or all")
	var c config
	fs.IntVar(&c.n, "n", 50, fmt.Sprintf("concurrent spenders, at most %d", cli.MaxN))
	fs.DurationVar(&c.work, "work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	fs.DurationVar(&c.ttl, "ttl", 2*time.Second, "lock TTL, at least 1ms and at most 1h")
	fs.DurationVar(&c.wait, "wait", 10*time.Second, "how long each spender waits for the lock, at most 1h")
	fs.StringVar(&c.prefix, "prefix", wallet.DefaultPrefix+"step4:", "prefix of the Redis keys this run writes; one run at a time per prefix")
	asJSON := fs.Bool("json", false, "print the results as one JSON object")
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	chosen, err := pick(*which)
	switch {
	case err != nil:
	case c.n < 1 || c.work < 0 || c.wait <= 0:
		err = errors.New("-n must be at least 1, -work at least 0 and -wait above 0")
	case lock.CheckTTL(c.ttl) != nil:
		// redislock itself takes -ttl 0 and hands back a lock that Redis
		// never kept: refuse such a TTL before anything runs.
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(c.ttl))
	}
	if code, stop := cli.Refuse(fs, stderr, err, cli.CheckPrefix(c.prefix), cli.CheckMax("-n", c.n, cli.MaxN),
		cli.CheckDuration("-work", c.work), cli.CheckDuration("-ttl", c.ttl), cli.CheckDuration("-wait", c.wait)); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, step+":", oneLine(err)); return 1 }

	rdb, err := services.Connect(ctx)
	if err != nil {
		return fail(err)
	}
	defer rdb.Close()
	// The run owns its prefix: a second run on it is refused, not mixed in.
	s, err := cli.Start(ctx, rdb, step, c.prefix)
	if err != nil {
		return fail(err)
	}
	defer s.Close(stderr, wallet.BalanceKey(c.prefix, wallet.DemoWallet), wallet.LockKey(c.prefix, wallet.DemoWallet))
	ctx = s.Context() // ends at Ctrl-C

	var results []result
	var cut *result // the strategy Ctrl-C cut short, as far as it was measured
	at := "after the last strategy"
	for _, st := range chosen {
		if s.Interrupted() {
			at = "before " + st.name
			break
		}
		// After Ctrl-C, spenders stuck on a frozen Redis are not waited for.
		m, done := cli.Await(s, func() measured { r, err := spendAll(ctx, rdb, st, c); return measured{r, err} })
		if s.Interrupted() && (!done || m.err != nil || m.r.cut) {
			at = "during " + st.name + ": " + cutShort(s, rdb, c.prefix, m, done, &cut)
			break
		}
		if !done || m.err != nil {
			if ctx.Err() != nil {
				m.err = context.Cause(ctx) // the run lease was lost
			}
			return fail(m.err)
		}
		results = append(results, m.r)
		if !*asJSON {
			printCheck(stdout, m.r)
		}
		reportErrors(stderr, m.r)
	}
	if cut != nil {
		if !*asJSON {
			printCheck(stdout, *cut)
		}
		reportErrors(stderr, *cut)
	}
	if *asJSON {
		writeJSON(stdout, c, results, cut, s.Interrupted())
	} else if all := appendCut(results, cut); len(all) > 0 {
		writeTable(stdout, c, all)
	}
	if s.Interrupted() {
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C %s\n", step, at)
		return cli.ExitInterrupted
	}
	for _, r := range results {
		if !r.OK || r.failed == c.n {
			return 1
		}
	}
	return 0
}

// measured is what spendAll returns, for cli.Await.
type measured struct {
	r   result
	err error
}

// cutShort reads back what the strategy that Ctrl-C cut short did, within
// the clean-up time, and says what it measured.
func cutShort(s *cli.Session, rdb redis.UniversalClient, prefix string, m measured, done bool, cut **result) string {
	if !done || !m.r.ran {
		return "Redis did not answer in time, nothing was measured"
	}
	rctx, cancel := s.Cleanup()
	defer cancel()
	if err := m.r.readBack(rctx, rdb, prefix); err != nil {
		return fmt.Sprintf("%d spends accepted; the balance could not be read back to check them (%s)", m.r.tally.Accepted, oneLine(err))
	}
	*cut = &m.r
	return "its row counts only the spends made before it"
}

func appendCut(results []result, cut *result) []result {
	if cut == nil {
		return results
	}
	return append(slices.Clone(results), *cut)
}

// spendAll runs the spenders with one strategy and measures them. When
// ctx ends while they run, the result says so (cut) and the balance may
// still have to be read back.
func spendAll(ctx context.Context, rdb redis.UniversalClient, s strategy, c config) (r result, err error) {
	balanceKey := wallet.BalanceKey(c.prefix, wallet.DemoWallet)
	lockKey := wallet.LockKey(c.prefix, wallet.DemoWallet)
	r = result{Strategy: s.name, Retry: s.retry, commands: -1}
	if err := rdb.Del(ctx, lockKey).Err(); err != nil { // a lease left by a run that died
		return r, fmt.Errorf("redis: delete %s: %w", lockKey, err)
	}
	if err := wallet.Set(ctx, rdb, balanceKey, initial); err != nil {
		return r, err
	}
	r.before, _ = services.ReadCommandStats(ctx, rdb) // nil if INFO failed: no command count

	var mu sync.Mutex
	start := time.Now()
	r.ran = true
	r.tally = wallet.Hammer(c.n, func(int) (bool, error) {
		// The wait for the lock is bounded by -wait. Without a deadline,
		// redislock would quietly stop retrying once the TTL had passed.
		wctx, cancel := context.WithTimeout(ctx, c.wait)
		defer cancel()
		retry := &redislockx.CountingRetry{Strategy: s.fresh()}
		t0 := time.Now()
		l, err := redislockx.Obtain(wctx, rdb, lockKey, c.ttl, &redislock.Options{RetryStrategy: retry})
		waited := time.Since(t0)
		mu.Lock()
		r.attempts += retry.Busy()
		if err == nil {
			r.attempts++
			r.waits = append(r.waits, waited)
		}
		mu.Unlock()
		if err != nil {
			return false, err
		}
		// redislock has no watchdog: step 3's keeps this lease alive too,
		// and cancels the spend if a refresh finds it gone.
		work, stopWatch := lock.KeepAlive(ctx, c.ttl, redislockx.Refresh(l, c.ttl))
		ok, err := wallet.Spend(work, rdb, balanceKey, amount, c.work)
		if err != nil && ctx.Err() == nil && work.Err() != nil {
			err = fmt.Errorf("%w: %w", errWatchdog, err) // not Ctrl-C: the watchdog
		}
		stopWatch()
		// The release runs even after Ctrl-C: a lease left behind would
		// block the next run for the rest of its TTL.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer rcancel()
		if rerr := l.Release(rctx); rerr != nil && err == nil && ctx.Err() == nil {
			// The write (if any) landed before the lease was found gone:
			// count the spend, report the release; Check tells if it hurt.
			mu.Lock()
			r.released = append(r.released, fmt.Errorf("lock: release %s: %w", lockKey, rerr))
			mu.Unlock()
		}
		return ok, err
	})
	r.wall = time.Since(start)
	r.cut = ctx.Err() != nil
	return r, r.readBack(ctx, rdb, c.prefix)
}

// readBack counts the commands the spenders caused, skipped quietly when
// INFO fails, and checks the balance, counting spends whose outcome is
// unknown apart (wallet.CheckUnknown).
func (r *result) readBack(ctx context.Context, rdb redis.UniversalClient, prefix string) error {
	if after, err := services.ReadCommandStats(ctx, rdb); err == nil && r.before != nil {
		r.commands = after.Since(r.before)
	}
	balance, err := wallet.Balance(ctx, rdb, wallet.BalanceKey(prefix, wallet.DemoWallet))
	if err != nil {
		return err
	}
	r.Verdict = wallet.CheckUnknown(initial, amount, r.tally.Accepted, r.tally.Unknown, balance)
	r.failed = len(r.tally.Errors)
	r.errs = slices.Concat(r.tally.Errors, r.released)
	return nil
}
