// Step 3: work that outlives its lease, and the watchdog that keeps it.
//
// A lease expires on time whether or not its holder has finished. Three
// phases, each on a fresh balance of 100 and each with its check line:
//
//  1. The TTL (600ms) is shorter than the work (1.2s) and nothing extends
//     it. The key expires mid-work, the next spender takes it and reads a
//     balance the first is about to overwrite: updates are lost. Every late
//     Release finds the key gone or holding another token, and deletes
//     nothing (lock.ErrNotHeld). BROKEN.
//  2. The same TTL and work, with lock.Watch: a watchdog refreshes the
//     lease every TTL/3 while the work runs. OK.
//  3. Watch again, but a third into the work another client writes its
//     own token to the lock key, as if this holder had stalled past its TTL
//     and someone else had taken over. The next refresh fails, the watchdog
//     cancels the work's context, and the spend stops before its write:
//     nothing is written. OK.
//
// Expect (the balance of phase 1 varies; the verdicts never do):
//
//	phase 1: ttl 600ms, work 1.2s, no watchdog
//	  3 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=80 expected=70 BROKEN
//	phase 2: ttl 600ms, work 1.2s, watchdog every 200ms
//	  0 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=70 expected=70 OK
//	phase 3: lease taken over 400ms into the work, watchdog every 200ms
//	  the watchdog cancelled the spend before its write, cause: lock: not held (expired or taken by another holder)
//	  accepted=0 balance=100 expected=100 OK
//
// Run it with:
//
//	go run ./cmd/step3-ttl
//	go run ./cmd/step3-ttl -phase 2
//	go run ./cmd/step3-ttl -ttl 3s   # the work fits in the TTL: phase 1 is OK, and the program says so
//
// It exits 0 when every phase gave the verdict the lesson promises
// (lesson.Phases), 1 when one did not or Redis failed, 2 on bad flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/lesson"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const step = "step3-ttl"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	var e env
	// Each refresh gets TTL/3 (200ms) to answer. Under -race on a loaded
	// 2-core machine a round trip took up to tens of milliseconds, and once
	// over 100ms: hence not a shorter TTL. The work is two TTLs, so phase
	// 1's lease always expires mid-work, and phase 2 stays near 3.6 s.
	fs.DurationVar(&e.ttl, "ttl", 600*time.Millisecond, "lease TTL, at least 1ms")
	fs.DurationVar(&e.work, "work", 1200*time.Millisecond, "time between the read and the write of a spend")
	fs.IntVar(&e.n, "n", 3, "spenders in phases 1 and 2 (phase 2 takes n x work)")
	fs.StringVar(&e.prefix, "prefix", wallet.DefaultPrefix+"step3:", "prefix of the Redis keys this run writes")
	only := fs.String("phase", "all", "which phase to run: 1, 2, 3 or all")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the text")
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	chosen, err := pick(*only)
	switch {
	case err != nil:
	case lock.CheckTTL(e.ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(e.ttl))
	case e.n < 1 || e.work < 0:
		err = errors.New("-n must be at least 1 and -work at least 0")
	}
	if err != nil {
		fmt.Fprintln(stderr, step+":", err)
		return 2
	}
	fail := func(err error) int { fmt.Fprintln(stderr, step+":", err); return 1 }

	if e.rdb, err = wallet.Connect(ctx); err != nil {
		return fail(err)
	}
	defer e.rdb.Close()
	version, err := wallet.RedisVersion(ctx, e.rdb)
	if err != nil {
		return fail(err)
	}
	defer e.rdb.Del(context.Background(), e.balanceKey(), e.lockKey())

	var outcomes []outcome
	for _, p := range chosen {
		o, err := p(ctx, e)
		if err != nil {
			return fail(fmt.Errorf("phase %s: %w", o.Phase, err))
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "phase %s: %s\n  %s\n  %s\n", o.Phase, o.setting, o.story, o.Check)
		}
		outcomes = append(outcomes, o)
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(map[string]any{
			"step": step, "redis_version": version, "phases": outcomes,
			"ttl": e.ttl.String(), "work": e.work.String(), "n": e.n,
		})
	}

	code := 0
	for _, o := range outcomes {
		if !o.Match() {
			p, _ := lesson.Lookup(step, o.Phase)
			fmt.Fprintf(stderr, "%s: phase %s gave %s, the lesson says %s (%s); try the defaults\n", step, o.Phase, o.Verdict, o.Want, p.What)
			code = 1
		}
		for _, problem := range o.problems {
			fmt.Fprintf(stderr, "%s: phase %s: %s\n", step, o.Phase, problem)
			code = 1
		}
	}
	return code
}
