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
//	accepted=10 balance=0 expected=0 OK
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
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/procs"
	"example.com/walletlock/internal/services"
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
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	release := fs.String("release", "auto", "how Release deletes the key: lua, delex (Redis 8.4+) or auto")
	n := fs.Int("n", 50, fmt.Sprintf("concurrent spenders, at most %d", harness.MaxN))
	ttl := fs.Duration("ttl", 2*time.Second, "lock TTL, at least 1ms and at most 1h")
	wait := fs.Duration("wait", 5*time.Second, "how long each spender waits for the lock, at most 1h")
	work := fs.Duration("work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	nprocs := fs.Int("procs", 1, fmt.Sprintf("run the spenders in this many processes, copies of this program (at most %d and -n); 1: goroutines of this one", procs.Max))
	prefix := fs.String("prefix", wallet.DefaultPrefix+"step2:", "prefix of the Redis keys this run writes")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	var err error
	switch {
	case *release != "auto" && *release != "lua" && *release != "delex":
		err = fmt.Errorf("-release: unknown release method %q (want auto, lua or delex)", *release)
	case lock.CheckTTL(*ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(*ttl))
	case *n < 1 || *wait <= 0 || *work < 0:
		err = errors.New("-n must be at least 1, -wait above 0 and -work at least 0")
	}
	if code, stop := harness.Refuse(fs, stderr, err, harness.CheckPrefix(*prefix), harness.CheckMax("-n", *n, harness.MaxN),
		harness.CheckDuration("-ttl", *ttl), harness.CheckDuration("-wait", *wait), harness.CheckDuration("-work", *work), procs.Check(*nprocs, *n)); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, step+":", err); return 1 }

	rdb, err := services.Connect(ctx)
	if err != nil {
		return fail(err)
	}
	defer rdb.Close()
	version, err := services.RedisVersion(ctx, rdb)
	if err != nil {
		return fail(err)
	}
	// Ask now how Release will delete the key on this server, so that
	// -release delex on an older Redis stops before anything runs.
	method, err := services.ReleaseMethod(ctx, rdb, *release, version)
	if err != nil {
		return fail(err)
	}

	balanceKey, lockKey := wallet.BalanceKey(*prefix, wallet.DemoWallet), wallet.LockKey(*prefix, wallet.DemoWallet)
	var releaseErrs procs.Errors
	spenders := procs.Spenders{N: *n, Procs: *nprocs, Args: args, Stderr: stderr, Also: &releaseErrs,
		Spend: func(ctx context.Context, _ int) (bool, error) {
			actx, cancel := context.WithTimeout(ctx, *wait)
			l, err := lock.Acquire(actx, rdb, lockKey, *ttl)
			cancel()
			if err != nil {
				return false, err
			}
			ok, err := wallet.Spend(ctx, rdb, balanceKey, amount, *work)
			// Release runs even after Ctrl-C: a lease left behind would
			// block everyone for the rest of its TTL. It sends DELEX where
			// the server has it; ReleaseLua always runs the script.
			giveBack := l.Release
			if *release == "lua" {
				giveBack = l.ReleaseLua
			}
			if rerr := giveBack(ctx); rerr != nil {
				releaseErrs.Add(rerr)
			}
			return ok, err
		}}
	if procs.Child() { // one of the -procs copies: it spends, the parent does the rest
		return spenders.Serve(ctx, stdout, stderr)
	}

	// The run owns its prefix: a second run on it is refused, not mixed in.
	s, err := harness.Start(ctx, rdb, step, *prefix)
	if err != nil {
		return fail(err)
	}
	defer s.Close(stderr, balanceKey, lockKey)
	ctx = s.Context() // ends at Ctrl-C
	stopped := func(err error) int { return s.Stopped(stderr, "before the balance could be read", err) }
	rdb.Del(ctx, lockKey) // a lease left by an interrupted run
	if err := wallet.Set(ctx, rdb, balanceKey, initial); err != nil {
		return stopped(err)
	}
	tally, ok := harness.Await(s, func() wallet.Tally { return spenders.Run(ctx) })
	if !ok { // Ctrl-C, and Redis did not answer the spenders in time
		return stopped(errors.New("the spenders got no answer from Redis in time"))
	}
	// What was measured is read back even after Ctrl-C.
	done, cancel := s.Cleanup()
	defer cancel()
	balance, err := wallet.Balance(done, rdb, balanceKey)
	if err != nil {
		return stopped(err)
	}
	left, err := rdb.Exists(done, lockKey).Result()
	if err != nil {
		return stopped(err)
	}
	verdict := wallet.CheckUnknown(initial, amount, tally.Accepted, tally.Unknown, balance)
	if !*asJSON {
		leftBehind := "no"
		if left > 0 {
			leftBehind = "YES"
		}
		fmt.Fprintln(stdout, verdict)
		fmt.Fprintf(stdout, "lock key left behind: %s (released with %s, Redis %s)\n", leftBehind, method, version)
	}

	r := harness.NewReport(step)
	failedReleases := releaseErrs.List()
	r.Set("redis_version", version)
	r.Set("release", method) // what releases used: lua or delex
	r.Set("procs", *nprocs)  // the spenders ran in this many processes
	r.Set("lock_left", left > 0)
	r.Set("failed_spends", len(tally.Errors))
	r.Set("unknown_spends", tally.Unknown)
	r.Set("failed_releases", len(failedReleases))
	unknownReleases := 0 // their reply was lost: deleted or not, nobody knows
	for _, err := range failedReleases {
		if errors.Is(err, lock.ErrUnknown) {
			unknownReleases++
		}
	}
	r.Set("unknown_releases", unknownReleases)
	if s.Interrupted() { // measured, but not what the lesson is about
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C; the check line counts only the spends made before it\n", step)
		r.Interrupted("lock", verdict, nil)
		return r.Finish(stdout, stderr, *asJSON)
	}
	r.Add("lock", verdict, nil)
	if line := harness.Outcomes(tally, *n, verdict); line != "" {
		r.Fail(stderr, errors.New(line))
	}
	if len(failedReleases) > 0 {
		r.Fail(stderr, fmt.Errorf("%d releases failed, first: %w (%d of them with an unknown outcome: the reply was lost)", len(failedReleases), failedReleases[0], unknownReleases))
	}
	if left > 0 {
		r.Fail(stderr, fmt.Errorf("the lock key %s is still there after every spender released it", lockKey))
	}
	return r.Finish(stdout, stderr, *asJSON)
}
