// Step 5: fencing tokens, checked by PostgreSQL.
//
// No lease can tell its holder that it has expired. A holder that pauses
// past its TTL (a long GC, a frozen VM) wakes up, still believes it holds
// the lock, and writes. So the wallet now lives in a PostgreSQL row, and
// the database has the last word; Redis keeps the lease and a counter that
// gives every holder a fence, a number above every fence before it. The
// phases (phases.go), each with its check line:
//
//   - 1: A takes the lease and reads 100, then pauses past its TTL; B takes
//     the lease, reads 100, writes 90; A wakes, writes 90. BROKEN: B's
//     spend is lost.
//   - 1b: fences checked on write only (WHERE fence < mine). A wakes after
//     B's read and before B's write: A's 90 lands (1 > 0), then B's (2 >
//     1). BROKEN: a fence orders writes, it does not make a read fresh.
//   - 2: fences claimed on read: B's read stamps the row with fence 2, and
//     A's write, allowed only while the row carries fence 1, is refused. OK.
//   - 3: fifty spenders through fencing.Do, a few stalling past the TTL:
//     their writes are refused. OK.
//   - 4: no Redis at all: a write lands only if the row's version is
//     still the one read. OK.
//
// Expect the verdicts on every run (fences, counts and pauses vary):
//
//	phase 1b: the fence checked on write only: two writes computed from one read both land
//	  A: takes the lease with fence 1, reads 100 without claiming the row, pauses
//	  B: takes the lease with fence 2 once A's has expired (A paused 208ms), reads 100 without claiming the row
//	  A: wakes, writes 90 with fence 1: accepted, the row's fence was 0
//	  B: writes 90 with fence 2: accepted, the row's fence was 1; B read 100 before A's spend, so A's spend is lost
//	  accepted=2 balance=90 expected=80 BROKEN
//
// Run it with:
//
//	go run ./cmd/step5-fencing
//	go run ./cmd/step5-fencing -phase 1b -json
//
// It exits 0 when every phase gave the verdict the lesson promises
// (lesson.Phases), 1 when one did not or a service failed, 2 on bad flags,
// and 130 after Ctrl-C, once it has deleted its wallet row and keys. One
// run at a time per -prefix; the row is the prefix's own.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/walletrun"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	step          = "step5-fencing"
	defaultPrefix = wallet.DefaultPrefix + "step5:"
	// maxN bounds -n below harness.MaxN: phase 3 hands the lease from spender
	// to spender, about 10 ms each, and must end within its hang guard.
	maxN = 1000
)

func main() { harness.Main(run) }

// The phases, in the lesson's order (phases.go). Each starts from a fresh
// row and fence counter, so a phase run alone tells the same story.
var phases = []struct {
	name  string
	redis bool // whether it needs Redis
	run   func(ctx context.Context, e env) (walletrun.Outcome, error)
}{
	{"1", true, pausedHolder},       // a plain lease: the paused holder's write lands
	{"1b", true, fenceOnWriteOnly},  // fences checked on write only: both writes land
	{"2", true, fenceClaimedOnRead}, // fences claimed on read: the stale write is refused
	{"3", true, fencedSpenders},     // fifty spenders through fencing.Do, a few stalling
	{"4", false, versionColumn},     // no Redis: a version column
}

// config is what the flags set; env is what the phases work with.
type config struct {
	ttl, pause, work time.Duration
	n, stalls        int
}

type env struct {
	config
	*walletrun.Run // the row (Store, ID), the lock (Redis, LockKey)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	var c config
	fs.DurationVar(&c.ttl, "ttl", 200*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	fs.DurationVar(&c.pause, "pause", 400*time.Millisecond, "how long a stalled holder of phase 3 pauses between its read and its write; longer than -ttl, at most 1h")
	fs.DurationVar(&c.work, "work", 2*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	fs.IntVar(&c.n, "n", 50, fmt.Sprintf("spenders in phases 3 and 4, at most %d", maxN))
	fs.IntVar(&c.stalls, "stalls", 5, "how many spenders of phase 3 stall past the TTL")
	id := fs.Int64("wallet-id", wallet.DemoWallet, "PostgreSQL wallet this run uses, and deletes at the end; when not given, 42 under the default -prefix and a number derived from any other")
	prefix := fs.String("prefix", defaultPrefix, "prefix of the Redis keys this run writes, and owner of its wallet row; one run at a time per prefix")
	only := fs.String("phase", "all", "which phase to run: 1, 1b, 2, 3, 4 or all")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the text")
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	derived := true // 42, or a wallet of the prefix's own
	fs.Visit(func(f *flag.Flag) { derived = derived && f.Name != "wallet-id" })
	if derived {
		*id = walletrun.DefaultID(*prefix, defaultPrefix)
	}
	chosen, needRedis := phases[:0:0], false
	for _, p := range phases {
		if *only == "all" || *only == p.name {
			chosen, needRedis = append(chosen, p), needRedis || p.redis
		}
	}
	var err error
	switch {
	case len(chosen) == 0:
		err = fmt.Errorf("-phase %q: want 1, 1b, 2, 3, 4 or all", *only)
	case lock.CheckTTL(c.ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(c.ttl))
	case c.pause <= c.ttl:
		err = fmt.Errorf("-pause %v must be longer than -ttl %v: a stalled holder must outlive its lease", c.pause, c.ttl)
	case c.work < 0 || c.n < 1 || *id < 1:
		err = fmt.Errorf("-work must be at least 0, -n and -wallet-id at least 1; got %v, %d and %d", c.work, c.n, *id)
	case c.stalls < 0 || c.stalls > c.n:
		err = fmt.Errorf("-stalls must be between 0 and -n (%d), got %d", c.n, c.stalls)
	}
	if code, stop := harness.Refuse(fs, stderr, err, harness.CheckPrefix(*prefix), harness.CheckMax("-n", c.n, maxN),
		harness.CheckDuration("-ttl", c.ttl), harness.CheckDuration("-pause", c.pause), harness.CheckDuration("-work", c.work)); stop {
		return code
	}

	r := harness.NewReport(step)
	w, err := walletrun.Open(ctx, walletrun.Options{Prog: step, Prefix: *prefix, ID: *id, NeedRedis: needRedis, TTL: c.ttl,
		// A phase that runs past a minute beyond its flags' work and
		// stalls has hung. (The bounds above keep this from overflowing.)
		Limit:    time.Minute + time.Duration(c.n)*c.work + time.Duration(c.stalls)*c.pause,
		Spenders: c.n, Report: r, JSON: *asJSON, Stdout: stdout, Stderr: stderr})
	if err != nil {
		fmt.Fprintln(stderr, step+":", walletrun.OneLine(err))
		return 1
	}
	r.Set("config", map[string]any{"ttl": c.ttl.String(), "pause": c.pause.String(), "work": c.work.String(),
		"spenders": c.n, "stalls": c.stalls, "wallet_id": *id, "prefix": *prefix})
	for _, p := range chosen {
		o, ok := w.Phase(p.name, func(ctx context.Context) (walletrun.Outcome, error) { return p.run(ctx, env{c, w}) })
		if !ok {
			break // Ctrl-C, or a failure: Finish says which
		}
		r.Add(p.name, o.Verdict, o) // the check against the lesson; o's figures go under "figures"
	}
	return w.Finish() // deletes the row and the keys, prints -json, and picks the exit code
}
