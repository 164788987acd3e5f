//go:build unix

// The drill: real processes, real faults.
//
// Steps 3 and 5 stage a stalled holder inside one process. Here the
// spenders are OS processes (this binary started again in a spender role),
// the Redis servers are redis-server processes the drill starts on free
// loopback ports, the balances live in PostgreSQL, and the faults come
// from outside the code: a spender stopped by SIGSTOP between its read and
// its write (pause), a holder killed (crash), the Redis primary killed and
// started again empty (restart), the replica cut off and the primary
// killed so that Sentinel promotes a replica that never saw the lock
// (failover), the same on a Redis Cluster (cluster-failover), and a
// network partition of three hosts, network namespaces of the drill's own
// (partition, partition-min-replicas: root and iproute2's ip only;
// elsewhere they are left out, and the drill exits 3). Each run prints the
// check line and the double grants: how many times two critical sections
// on one wallet overlapped.
//
// Expect, on every run, the verdicts of lesson.Drills:
//
//	pause    lock     seed 1  accepted=... BROKEN  double grants 12 ...
//	pause    fenced   seed 1  accepted=... OK  double grants 9 ...
//
// Run it with:
//
//	go run ./cmd/drill -nemesis pause,restart -strategy lock,fenced -seeds 3   # make drills
//	go run ./cmd/drill -seeds 20                                               # everything
//	go run ./cmd/drill -nemesis cluster-failover -strategy lock,fenced         # on a Redis Cluster
//	go run ./cmd/drill -nemesis partition -strategy lock,fenced -seeds 3       # as root: a network partition
//	go run ./cmd/drill -json                                                   # one JSON row per run
//
// It exits 0 when every cell gives the verdict the lesson table says, 1
// when not or when something fails, 2 on bad flags, 3 when it left the
// partition out, and 130 after Ctrl-C (or SIGTERM, SIGHUP, a closed
// stdout), once it has killed every process it started, removed its
// network and deleted its rows. Its wallet ids follow from -prefix. What a
// drill killed before its clean-up left (rows, a folder, a network), the
// next drill removes once its owner is provably dead, and says so.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/drill"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/netns"
)

const prog = "drill"

func main() {
	if c, ok := drill.SpenderRole(); ok {
		os.Exit(drill.RunSpender(c, os.Stdin, os.Stdout, os.Stderr))
	}
	harness.Main(run)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(prog, flag.ContinueOnError)
	nemeses := fs.String("nemesis", "all", "all, or some of "+strings.Join(drill.Nemeses, ",")+" (comma-separated)")
	strategies := fs.String("strategy", "all", "all, or some of "+strings.Join(drill.Strategies, ",")+" (comma-separated)")
	seeds := fs.Int("seeds", 1, "runs of each cell, seeds -seed, -seed+1, ...; at most 100")
	seed := fs.Int64("seed", 1, "the first seed: it picks when each fault strikes and how long a pause lasts")
	c := drill.Config{Procs: 3, Conc: 2, Wallets: 2, Initial: 1_000_000, Amount: 7, TTL: 500 * time.Millisecond, Work: 10 * time.Millisecond}
	fs.IntVar(&c.Procs, "procs", c.Procs, "spender processes, 2 to 16")
	fs.IntVar(&c.Conc, "conc", c.Conc, "concurrent spends in each spender process, 1 to 16")
	fs.IntVar(&c.Wallets, "wallets", c.Wallets, fmt.Sprintf("wallets they all spend from, 1 to %d", drill.MaxWallets))
	fs.DurationVar(&c.TTL, "ttl", c.TTL, "lease TTL, 100ms to 10s")
	fs.DurationVar(&c.Work, "work", c.Work, "time between the read and the write, under half the TTL")
	fs.DurationVar(&c.Partition, "partition", drill.DefaultPartition, fmt.Sprintf("how long a partition lasts once the majority's Sentinels have promoted a replica\n(about 3 s after the cut), %v to %v; longer on a slow machine, until the two\nprimaries' holders have met", drill.MinPartition, drill.MaxPartition))
	fs.Int64Var(&c.First, "first-id", 0, "first PostgreSQL wallet id this drill uses; 0 derives one from -prefix, so that drills\non different prefixes never share a wallet")
	fs.StringVar(&c.Prefix, "prefix", ledger.DefaultPrefix+"drill:", "owner of the PostgreSQL rows and prefix of the lock keys")
	historyFile := fs.String("history", "", "also write each run's history of spends (a window of one wallet) as porcupine's HTML page to this file")
	asJSON := fs.Bool("json", false, "print one JSON object per run (nemesis, strategy, seed), then the exit code says it all")
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	nems, err1 := harness.Pick("-nemesis", *nemeses, drill.Nemeses)
	strats, err2 := harness.Pick("-strategy", *strategies, drill.Strategies)
	if c.First == 0 {
		c.First = drill.FirstID(c.Prefix)
	}
	var bad error
	switch {
	case *seeds < 1 || *seeds > 100:
		bad = fmt.Errorf("-seeds must be 1 to 100, got %d", *seeds)
	case *seed > math.MaxInt64-int64(*seeds-1):
		bad = fmt.Errorf("-seed %d leaves no room for -seeds %d below 2^63 (at most %d)", *seed, *seeds, math.MaxInt64-int64(*seeds-1))
	case c.Procs < 2 || c.Procs > 16 || c.Conc < 1 || c.Conc > 16:
		bad = fmt.Errorf("-procs must be 2 to 16 and -conc 1 to 16, got %d and %d", c.Procs, c.Conc)
	case c.Wallets < 1 || c.Wallets > drill.MaxWallets:
		bad = fmt.Errorf("-wallets must be 1 to %d, got %d", drill.MaxWallets, c.Wallets)
	case c.TTL < 100*time.Millisecond || c.TTL > 10*time.Second:
		bad = fmt.Errorf("-ttl must be 100ms to 10s, got %v", c.TTL)
	case c.Work < 0 || 2*c.Work >= c.TTL:
		bad = fmt.Errorf("-work must be at least 0 and under half the -ttl (%v), got %v: a holder must finish well within its lease", c.TTL, c.Work)
	case c.Partition < drill.MinPartition || c.Partition > drill.MaxPartition:
		bad = fmt.Errorf("-partition must be %v to %v, got %v", drill.MinPartition, drill.MaxPartition, c.Partition)
	case c.First < 1 || c.First > math.MaxInt64-int64(c.Wallets):
		bad = fmt.Errorf("-first-id must be at least 1 and leave room for -wallets ids below 2^63, got %d", c.First)
	}
	if *historyFile != "" && bad == nil {
		bad = harness.CheckPageOf("-history", *historyFile)
	}
	if code, stop := harness.Refuse(fs, stderr, err1, err2, bad, harness.CheckPrefix(c.Prefix)); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, prog+": "+oneLine(err)); return 1 }
	c.Say = func(line string) { fmt.Fprintln(stderr, prog+": "+harness.Printable(unrepeated(line))) }
	leftOut := ""
	if asked := slices.DeleteFunc(slices.Clone(nems), func(n string) bool { return !drill.IsPartition(n) }); len(asked) > 0 {
		if err := netns.CanPartition(); err != nil {
			nems = slices.DeleteFunc(nems, drill.IsPartition)
			leftOut = fmt.Sprintf("left out -nemesis %s: %s", strings.Join(asked, ","), oneLine(err))
			fmt.Fprintln(stderr, prog+": "+leftOut)
		} else if _, err := netns.PostgresAddr(env.DatabaseURL()); err != nil {
			// Its spenders reach PostgreSQL from their namespaces, over
			// TCP: say so before anything is set up or run.
			return fail(err)
		}
	}
	if _, err := launch.RedisBinary(); err != nil {
		return fail(err)
	}
	pool, err := env.ConnectPostgres(ctx)
	if err != nil {
		return fail(err)
	}
	defer pool.Close()
	if c.Store, err = ledger.Open(ctx, pool, c.Prefix); err != nil {
		return fail(err)
	}
	if slices.Contains(strats, drill.RedlockFenced) {
		if err := drill.CreateFenceSequence(ctx, pool); err != nil {
			return fail(err)
		}
	}
	release, err := drill.TakePrefix(ctx, pool, c.Prefix)
	if err != nil {
		return fail(err)
	}
	defer release()
	// A drill killed before its clean-up (SIGKILL, a power cut) leaves its
	// rows; its lease went with its connection.
	if note, err := drill.TakeOver(ctx, pool, c.Prefix, c.First, c.Wallets); err != nil {
		return fail(err)
	} else if note != "" {
		fmt.Fprintln(stderr, prog+": "+note)
	}
	if c.Exe, err = os.Executable(); err != nil {
		return fail(err)
	}
	// What drills killed before their clean-up left (their folders, their
	// networks) goes once their owner is provably dead; nothing of a live
	// run is touched.
	if note, err := drill.RemoveLeftovers(); err != nil {
		c.Say(oneLine(err))
	} else if note != "" {
		c.Say(note)
	}
	if c.Dir, err = drill.MkdirTemp(); err != nil {
		return fail(err)
	}
	defer os.RemoveAll(c.Dir)
	procs := &launch.Group{}
	r := newReport(stdout, *asJSON)
	r.header(ctx, pool, c, nems)

	var runErr error
cells:
	for _, n := range nems {
		for _, s := range strats {
			if ok, why := drill.Applies(n, s); !ok {
				r.skip(n, s, why)
				continue
			}
			for i := range *seeds {
				c.Nemesis, c.Strategy, c.Seed = n, s, *seed+int64(i)
				res, err := drill.Run(ctx, procs, c)
				if err != nil {
					runErr = fmt.Errorf("%s %s seed %d: %w", n, s, c.Seed, err)
					break cells
				}
				r.add(res)
			}
		}
	}

	// Clean up even after Ctrl-C: every process this drill started, then
	// its rows.
	left := procs.KillAll(harness.CleanupTimeout)
	done, cancel := harness.Cleanup(ctx)
	defer cancel()
	if err := c.Store.DeleteRange(done, c.First, c.Wallets); err != nil {
		fmt.Fprintf(stderr, "%s: could not delete its rows (%v); delete them with: %s\n", prog, err, harness.PostgresDeleteRange(c.Prefix, c.First, c.Wallets))
	}
	if len(left) > 0 {
		fmt.Fprintf(stderr, "%s: these processes did not die: %s\n", prog, strings.Join(left, ", "))
	}
	// The verdict goes through the harness's report, as every program's
	// does; the rows were the JSON, so Finish prints no object of its own.
	rep := harness.NewReport(prog)
	r.table()
	if *historyFile != "" && len(r.rows) > 0 {
		// Its checks are bounded, and stop at Ctrl-C: what is left
		// unchecked is drawn as unknown.
		err := harness.SavePage(*historyFile, func(w io.Writer) error { return drill.WritePage(ctx, w, r.rows) })
		if err != nil {
			rep.Fail(stderr, fmt.Errorf("-history: %w", err))
		}
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "%s: interrupted by %s; the table counts the runs that finished\n", prog, harness.Why(ctx))
		rep.Interrupt()
	case runErr != nil:
		rep.Fail(stderr, errors.New(oneLine(runErr)))
	default:
		r.judge(rep, stderr)
	}
	code := rep.Finish(stdout, stderr, false)
	if code == 0 && leftOut != "" {
		return ExitLeftOut
	}
	return code
}

// oneLine is err's message for a line of the drill's stderr, printable
// and without a repeated "drill: " (see unrepeated).
func oneLine(err error) string { return unrepeated(safe.Line(err.Error())) }

// unrepeated drops the program's name where a message repeats it, at its
// start or after a colon: "drill: partition lock seed 1: drill: ..."
// reads "partition lock seed 1: ...". A prefix holds no space, so no
// prefix is cut.
func unrepeated(s string) string {
	s = strings.TrimPrefix(s, prog+": ")
	return strings.ReplaceAll(s, ": "+prog+": ", ": ")
}

// ExitLeftOut is the exit code of a drill that gave the lesson's verdicts
// but left the partition out: not a pass.
const ExitLeftOut = 3
