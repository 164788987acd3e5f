// Step 5: fencing tokens, checked by PostgreSQL.
//
// No lease can tell its holder that it has expired. A holder that pauses
// past its TTL (a long GC, a frozen VM) wakes up, still believes it holds
// the lock, and writes. So the wallet now lives in a PostgreSQL row, and
// the database has the last word. Redis keeps the lease and a counter that
// gives every holder a fence, a number above every fence before it; the
// holder's read claims the row with its fence, and its write lands only
// while the row still carries that fence. A write computed from a read
// that someone has since overtaken is refused. Four phases, each with its
// check line:
//
//  1. A takes the lease and reads, then pauses past its TTL; B takes the
//     lease, reads and writes; A wakes and writes. BROKEN: one spend lost.
//  2. The same timeline with fences: PostgreSQL refuses A's write. OK.
//  3. Fifty spenders through fencing.Do, a few of whom stall past the
//     TTL: their writes are refused. OK. (fencing.Do also heals the fence
//     counter when a Redis restart has lost it.)
//  4. No Redis at all: a version column and a conditional UPDATE. OK.
//
// Expect (fences, counts and pauses vary; the verdicts never do):
//
//	phase 1: a paused holder writes after its lease expired
//	  A: takes the lease, reads 100, pauses
//	  B: takes the lease once A's has expired (A paused 206ms, TTL 200ms), reads 100, writes 90
//	  A: wakes, writes 90: accepted, and stale: A read 100 before B's spend, so B's spend is lost
//	  accepted=2 balance=90 expected=80 BROKEN
//
//	phase 2: the same timeline with fencing: PostgreSQL refuses the stale write
//	  A: takes the lease with fence 1, claims the row, reads 100, pauses
//	  B: takes the lease with fence 2 once A's has expired (A paused 213ms), claims the row, reads 100, writes 90
//	  A: wakes, writes 90 with fence 1: refused, the row carries fence 2 (B's): A's was the stale write
//	  accepted=1 balance=90 expected=90 OK
//
//	phase 3: ...  stale writes refused: 5, fences [6 20 22 30 36]; highest fence 50
//	  accepted=45 balance=50 expected=50 OK
//	phase 4: ...  version conflicts: 296, each one a spend that read again and retried
//	  accepted=10 balance=0 expected=0 OK
//
// Run it with:
//
//	go run ./cmd/step5-fencing
//	go run ./cmd/step5-fencing -phase 2
//	go run ./cmd/step5-fencing -stalls 10 -json
//
// It exits 0 when every phase gave the verdict the lesson promises
// (lesson.Phases), 1 when one did not or a service failed, 2 on bad flags.
//
// One run at a time per -prefix (cli.Session), and the wallet row is
// the prefix's (wallet.Store.Owned): without -wallet-id, a run on another
// prefix uses a wallet of its own. Ctrl-C stops the phase, deletes the row
// and the keys within cli.CleanupTimeout even when a service is frozen,
// names what it could not delete with the command that does, and exits
// 130.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/wallet"
)

const step = "step5-fencing"

func main() { cli.Main(run) }

// Defaults that other code refers to.
const (
	defaultN      = 50
	defaultPrefix = wallet.DefaultPrefix + "step5:"
)

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	var c config
	fs.DurationVar(&c.ttl, "ttl", 200*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	fs.DurationVar(&c.pause, "pause", 400*time.Millisecond, "how long a stalled holder of phase 3 pauses between its read and its write; longer than -ttl, at most 1h")
	fs.DurationVar(&c.work, "work", 2*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	fs.IntVar(&c.n, "n", defaultN, fmt.Sprintf("spenders in phases 3 and 4, at most %d", maxN))
	fs.IntVar(&c.stalls, "stalls", 5, "how many spenders of phase 3 stall past the TTL")
	fs.Int64Var(&c.id, "wallet-id", wallet.DemoWallet, "PostgreSQL wallet this run uses, and deletes at the end; when not given, 42 under the default -prefix and a number derived from any other")
	fs.StringVar(&c.prefix, "prefix", defaultPrefix, "prefix of the Redis keys this run writes, and owner of its wallet row; one run at a time per prefix")
	only := fs.String("phase", "all", "which phase to run: 1, 2, 3, 4 or all")
	asJSON := fs.Bool("json", false, "print one JSON object instead of the text")
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["wallet-id"] {
		c.id = walletFor(c.prefix)
	}
	chosen, err := c.validate(*only)
	if err != nil {
		fmt.Fprintln(stderr, step+":", err)
		return 2
	}

	out := report{Step: step, Config: c.show(), Phases: []outcome{}}
	e, s, err := connect(ctx, c, chosen, &out)
	if err != nil {
		fmt.Fprintln(stderr, step+":", oneLine(err))
		return 1
	}
	defer s.close()

	if !*asJSON {
		fmt.Fprintln(stdout, out.header())
	}
	var failure error
	for _, p := range chosen {
		if s.interrupted() {
			break
		}
		// After Ctrl-C, a phase stuck on a frozen Redis is not waited for.
		r, done := await(s, func() ran {
			// A phase that runs far past what its flags ask for has gone
			// wrong, and must not hang.
			pctx, cancel := context.WithTimeout(s.ctx, c.phaseLimit())
			defer cancel()
			o, err := p.run(pctx, e)
			return ran{o, err}
		})
		if s.interrupted() { // the phase is not judged
			out.Interrupted, out.During = true, p.name
			break
		}
		if !done || r.err != nil {
			failure = fmt.Errorf("phase %s: %w", p.name, r.err)
			if owned := (*wallet.OwnedError)(nil); errors.As(r.err, &owned) {
				failure = owned // the one line says it all
			}
			if s.ctx.Err() != nil {
				failure = fmt.Errorf("phase %s: %w", p.name, context.Cause(s.ctx)) // the run lease was lost
			}
			break
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "\nphase %s: %s\n", p.name, c.what(p.name))
			for _, line := range r.o.lines {
				fmt.Fprintln(stdout, "  "+line)
			}
			fmt.Fprintln(stdout, "  "+r.o.Check)
		}
		out.Phases = append(out.Phases, r.o)
	}
	out.Interrupted = s.interrupted()
	s.finish(stderr, e)

	if *asJSON && (failure == nil || len(out.Phases) > 0) {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil && failure == nil {
			failure = err
		}
	}
	switch {
	case s.interrupted():
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C%s\n", step, during(out.During))
		return cli.ExitInterrupted
	case failure != nil:
		fmt.Fprintln(stderr, step+":", oneLine(failure))
		return 1
	}
	code := 0
	for _, o := range out.Phases {
		if !o.Match() {
			fmt.Fprintf(stderr, "%s: phase %s gave %s, the lesson says %s\n", step, o.Phase, o.Verdict, o.Want)
			code = 1
		}
	}
	return code
}

// ran is what a phase returns, for cli.Await.
type ran struct {
	o   outcome
	err error
}

// during names the phase the run stopped in, if it stopped in one.
func during(phase string) string {
	if phase == "" {
		return " between two phases"
	}
	return " during phase " + phase + ", which is not judged"
}
