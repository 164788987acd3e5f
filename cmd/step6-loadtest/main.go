// Step 6: every strategy side by side, under load.
//
// 64 workers spend from 16 wallets for 4 s per strategy: no lock (the
// control), the hand-built lock, bsm/redislock, go-redsync, go-redsync
// over three independent nodes (redlock: `make redlock-up` starts them;
// without them the default run leaves it out and says so), the fair lock
// (waiters queue, a release hands off), a fenced lease checked by
// PostgreSQL, one Lua script that checks and takes (atomic, no lock), a
// version column, and SELECT ... FOR UPDATE. Each gets fresh wallets and
// one row: spends per second, attempts, refusals, errors, unknown outcomes
// (writes never answered, which the verdict allows for), lock-wait and
// spend latencies, Redis commands per spend, and the verdict, wallet by
// wallet. Then the ceiling (the best rate this machine allows, from round
// trips measured at the start), each rate against none's, and each p99
// lock wait against a queue served in turn. Expect none BROKEN and every
// other row OK; the rates depend on the machine. It takes about 45 s and
// ends with a check line per strategy, summed over the wallets, and the
// verdict of its history (every spend recorded and checked for
// linearizability: -history FILE.html draws it), such as:
//
//	none:       accepted=67820 balance=15999832890 expected=15999321800 BROKEN linearizable=no
//	fair:       accepted=16827 balance=15999831730 expected=15999831730 OK linearizable=yes
//
// Run it with (-workers 2,8,50 is a contention sweep: every strategy at 2,
// then 8, then 50 workers):
//
//	go run ./cmd/step6-loadtest
//	go run ./cmd/step6-loadtest -strategy lock,forupdate -hot
//	go run ./cmd/step6-loadtest -strategy lock,fair -hot -work 2ms -workers 2,8,50
//	go run ./cmd/step6-loadtest -workers 1000 -wallets 10000 -json
//
// A run holds a lease on its -prefix, and its wallets in PostgreSQL are
// the prefix's: a second run on the same prefix, or on ids another run
// holds, is refused. By default each prefix gets ids of its own, so runs
// with different prefixes never share a wallet.
//
// Exit status: 0 when every strategy but none is OK, 1 when one is BROKEN,
// measured nothing (no spend accepted, or more than 5% of them failed) or
// a service fails, 2 for bad flags, 130 after Ctrl-C (what was measured is
// still printed, and what could not be deleted is named).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"example.com/walletlock/internal/charts"
	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/loadtest"
)

const step = "step6-loadtest"

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := loadtest.Defaults()
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	which := fs.String("strategy", "all", "all, or one or more of "+strings.Join(loadtest.Strategies(), ",")+" (comma-separated)")
	fs.IntVar(&c.Wallets, "wallets", c.Wallets, fmt.Sprintf("wallets to spend from, at most %d", loadtest.MaxWallets))
	workers := fs.String("workers", fmt.Sprint(c.Workers), fmt.Sprintf("concurrent spenders, at most %d; a `list` such as 2,8,50 runs every strategy at each count\n(at most %d counts): the contention sweep", loadtest.MaxWorkers, loadtest.MaxLevels))
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long each strategy runs")
	fs.Int64Var(&c.Ops, "ops", c.Ops, "stop each strategy after this many spends, or at -duration if that comes first (0: no limit)")
	fs.DurationVar(&c.Work, "work", c.Work, "time between the read and the write of a spend")
	fs.Int64Var(&c.Amount, "amount", c.Amount, "amount each spend takes")
	fs.Int64Var(&c.Initial, "initial", c.Initial, "starting balance of every wallet")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the workers' wallet picks")
	fs.BoolVar(&c.Hot, "hot", c.Hot, "send every spend to one wallet")
	fs.IntVar(&c.Pool, "pool", c.Pool, fmt.Sprintf("connections per pool, 1 to %d (PostgreSQL's at most %d); 0 sizes them to the workers,\nat most %d for Redis", loadtest.MaxPool, loadtest.MaxPostgresConns, loadtest.MaxRedisConns))
	fs.DurationVar(&c.TTL, "ttl", c.TTL, "lease of the Redis locks, at least 1ms")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "longest a spend may take, waiting for its lock included")
	fs.StringVar(&c.Prefix, "prefix", c.Prefix, "prefix of the Redis keys this run writes, and owner of its PostgreSQL rows")
	fs.Int64Var(&c.FirstID, "first-id", 0, "first PostgreSQL wallet id this run uses; 0 derives one from -prefix, so that runs\nwith different prefixes never share a wallet (ids another run holds are refused)")
	asJSON := fs.Bool("json", false, "print the whole report as one JSON object")
	htmlFile := fs.String("html", "", "also write the report, with charts, as one HTML page to this file")
	historyFile := fs.String("history", "", "also write the histories, a window of one wallet per strategy, as porcupine's HTML page to this file")
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	err := c.Resolve(*workers, *which)
	if err == nil && *htmlFile != "" { // a page that could not be written is refused before any work
		err = charts.CheckPage(*htmlFile)
	}
	if err == nil && *historyFile != "" {
		err = charts.CheckPageOf("-history", *historyFile)
		c.History = loadtest.HistoryPage
	}
	if err != nil {
		fmt.Fprintln(stderr, step+":", strings.TrimPrefix(err.Error(), loadtest.ErrBadConfig.Error()+": "))
		return 2
	}
	c.Progress = loadtest.ProgressTo(stderr) // a bar only on a terminal

	// Redlock's three nodes come from `make redlock-up`, not `make up`:
	// the default run goes on without them, and says so.
	env, leftOut, err := loadtest.DialLeavingOut(ctx, &c, *which == "all")
	for name, why := range leftOut {
		fmt.Fprintf(stderr, "%s: leaving %s out: %s\n", step, name, why)
	}
	if err != nil {
		if ctx.Err() != nil {
			return interrupted(stderr, false)
		}
		if errors.Is(err, loadtest.ErrBadConfig) { // REDLOCK_ADDRS naming one node twice
			fmt.Fprintln(stderr, step+":", strings.TrimPrefix(err.Error(), loadtest.ErrBadConfig.Error()+": "))
			return 2
		}
		fmt.Fprintln(stderr, step+":", err)
		return 1
	}
	defer env.Close()
	if env.Redlock != nil && env.Redlock.Degraded() != "" { // a minority down: Redlock runs
		fmt.Fprintln(stderr, step+":", env.Redlock.Degraded())
	}
	rep, runErr := loadtest.Run(ctx, env, c)
	if rep == nil { // it failed before anything was measured
		fmt.Fprintln(stderr, step+":", runErr)
		return 1
	}
	if !*asJSON {
		rep.WriteTable(stdout)
	}

	// Each row against the lesson: every strategy but none must be OK.
	r := harness.NewReport(step)
	r.Control("none") // no lock: BROKEN under contention, but with little of it no update happens to be lost
	for _, row := range rep.Rows {
		switch {
		case row.Check == "": // its balances were not read back: nothing to judge
		case row.Interrupted:
			r.Interrupted(row.Strategy, row.Sum, nil) // measured, but not what the lesson is about
		default:
			r.AddAt(row.Strategy, row.Workers, row.Sum, nil)
		}
	}
	if runErr != nil { // a service failed: the rows measured before it stand
		r.Fail(stderr, runErr)
	}
	if err := r.SetAll(rep); err != nil { // the figures, beside the phases in -json
		r.Fail(stderr, err)
	}
	if len(leftOut) > 0 {
		r.Set("left_out", leftOut) // the workshop reads it: not run is not missing
	}
	if *htmlFile != "" {
		if err := charts.SaveLoad(*htmlFile, rep); err != nil {
			r.Fail(stderr, err)
		}
	}
	if err := rep.HistoryErr(); err != nil { // a correct strategy whose history is not linearizable
		r.Fail(stderr, err)
	}
	if *historyFile != "" {
		if err := rep.WriteHistory(*historyFile); err != nil {
			r.Fail(stderr, err)
		}
	}
	if none := rep.Unmeasured(); len(none) > 0 && !rep.Interrupted {
		r.Fail(stderr, fmt.Errorf("measured nothing: %s", strings.Join(none, ", ")))
	}
	if rep.Leftovers != nil {
		fmt.Fprintln(stderr, step+":", rep.Leftovers)
	}
	if rep.Interrupted {
		r.Interrupt()
		interrupted(stderr, len(rep.Rows) > 0)
	}
	return r.Finish(stdout, stderr, *asJSON)
}

func interrupted(stderr io.Writer, measured bool) int {
	if measured {
		fmt.Fprintln(stderr, step+": interrupted by Ctrl-C; the last row counts only the spends made before it")
	} else {
		fmt.Fprintln(stderr, step+": interrupted by Ctrl-C before the first strategy ran")
	}
	return harness.ExitInterrupted
}
