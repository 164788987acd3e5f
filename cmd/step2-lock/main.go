// Step 2: a lock built by hand, a lease on a Redis key.
//
// The fifty spenders of step 1 again, but each one now takes the wallet's
// lock before it reads and gives it back after it writes. lock.Acquire sets
// the lock key to a fresh random token only if the key does not exist, with
// a 2 s expiry so that a crashed holder cannot block the others for good
// (SET key token NX PX 2000), and retries every 5 to 15 ms while someone
// else holds it. Release deletes the key only if it still holds that token,
// in one atomic step: a Lua script, or DELEX on Redis 8.4 and later. The
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

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
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

func main() { cli.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	release := fs.String("release", "auto", "how Release deletes the key: lua, delex (Redis 8.4+) or auto")
	n := fs.Int("n", 50, fmt.Sprintf("concurrent spenders, at most %d", cli.MaxN))
	ttl := fs.Duration("ttl", 2*time.Second, "lock TTL, at least 1ms and at most 1h")
	wait := fs.Duration("wait", 5*time.Second, "how long each spender waits for the lock, at most 1h")
	work := fs.Duration("work", 2*time.Millisecond, "time between the read and the write, at most 1h")
	nprocs := fs.Int("procs", 1, fmt.Sprintf("run the spenders in this many processes, copies of this program (at most %d and -n); 1: goroutines of this one", procs.Max))
	prefix := fs.String("prefix", wallet.DefaultPrefix+"step2:", "prefix of the Redis keys this run writes")
	asJSON := fs.Bool("json", false, "print the result as one JSON object")
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
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
	if code, stop := cli.Refuse(fs, stderr, err, cli.CheckPrefix(*prefix), cli.CheckMax("-n", *n, cli.MaxN),
		cli.CheckDuration("-ttl", *ttl), cli.CheckDuration("-wait", *wait), cli.CheckDuration("-work", *work), procs.Check(*nprocs, *n)); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, step+":", err); return 1 }

	rdb, err := services.Connect(ctx)
	if err != nil {
		return fail(err)
	}
	defer rdb.Close()
	r := report{lockKey: wallet.LockKey(*prefix, wallet.DemoWallet), Release: "lua", n: *n, Procs: *nprocs}
	if r.Redis, err = services.RedisVersion(ctx, rdb); err != nil {
		return fail(err)
	}
	// Ask now whether the server has DELEX, as Release will, so that
	// -release delex on an older Redis stops before anything runs.
	delex, err := hasDelex(ctx, rdb)
	if err != nil {
		return fail(err)
	}
	if *release == "delex" && !delex {
		return fail(fmt.Errorf("-release delex needs Redis 8.4 or later, this server is Redis %s; use -release lua or auto", r.Redis))
	}
	if delex && *release != "lua" {
		r.Release = "delex" // what Release picks on this server
	}

	balanceKey := wallet.BalanceKey(*prefix, wallet.DemoWallet)
	var releaseErrs procs.Errors
	spenders := procs.Spenders{N: *n, Procs: *nprocs, Args: args, Stderr: stderr, Also: &releaseErrs,
		Spend: func(ctx context.Context, _ int) (bool, error) {
			actx, cancel := context.WithTimeout(ctx, *wait)
			l, err := lock.Acquire(actx, rdb, r.lockKey, *ttl)
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
	s, err := cli.Start(ctx, rdb, step, *prefix)
	if err != nil {
		return fail(err)
	}
	defer s.Close(stderr, balanceKey, r.lockKey)
	ctx = s.Context()       // ends at Ctrl-C
	rdb.Del(ctx, r.lockKey) // a lease left by an interrupted run
	if err := wallet.Set(ctx, rdb, balanceKey, initial); err != nil {
		return failed(stderr, s, err)
	}
	tally, ok := cli.Await(s, func() wallet.Tally { return spenders.Run(ctx) })
	if !ok { // Ctrl-C, and Redis did not answer the spenders in time
		return failed(stderr, s, errors.New("the spenders got no answer from Redis in time"))
	}
	r.releaseErrs = releaseErrs.List()
	// What was measured is read back even after Ctrl-C.
	done, cancel := s.Cleanup()
	defer cancel()
	balance, err := wallet.Balance(done, rdb, balanceKey)
	if err != nil {
		return failed(stderr, s, err)
	}
	left, err := rdb.Exists(done, r.lockKey).Result()
	if err != nil {
		return failed(stderr, s, err)
	}
	r.LockLeft = left > 0
	r.Interrupted = s.Interrupted()
	r.tally = tally
	r.verdict = wallet.CheckUnknown(initial, amount, tally.Accepted, tally.Unknown, balance)
	return r.print(stdout, stderr, *asJSON)
}

// hasDelex reports whether the server knows DELEX (Redis 8.4 and later):
// COMMAND INFO answers nil for a command it does not have.
func hasDelex(ctx context.Context, rdb *redis.Client) (bool, error) {
	info, err := rdb.Do(ctx, "command", "info", "delex").Slice()
	if err != nil {
		return false, fmt.Errorf("ask whether Redis has DELEX: %w", err)
	}
	return len(info) == 1 && info[0] != nil, nil
}
