// Loadtest is the lab's deep load test; the article's step 6 is
// cmd/step6-loadtest at the root, which puts the steps' strategies side by
// side in four columns. This one goes further: every strategy the repo
// has, under one load, each on fresh wallets.
//
// 64 workers spend from 16 wallets for 4 s per strategy: none (no lock,
// the control), lock, redislock, redsync, redlock (three nodes, `make
// redlock-up`; a default run without them leaves it out and says so),
// fair, fenced, atomic, version and forupdate, each a spend function of
// loadtest/strategy.go. Each row gives the serial ceiling and the
// share of it reached, the wait for a lock and for a pooled connection,
// and whether the history of spends is linearizable. Expect none BROKEN
// and every other row OK; it takes about 45 s and ends with a check line
// per strategy, summed over its wallets, such as:
//
//	none:       accepted=67820 balance=15999832890 expected=15999321800 BROKEN linearizable=no
//	fair:       accepted=16827 balance=15999831730 expected=15999831730 OK linearizable=yes
//
// Its phases are the strategies, under the step name "loadtest" in
// internal/lesson. Run it with (-workers 2,8,50 is a contention sweep;
// -html and -history write pages):
//
//	go run ./cmd/loadtest
//	go run ./cmd/loadtest -strategy lock,forupdate -hot
//	go run ./cmd/loadtest -strategy lock,fair -hot -work 2ms -workers 2,8,50 -html sweep.html
//	go run ./cmd/loadtest -workers 1000 -wallets 10000 -json
package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/loadtest"
)

const step = "loadtest"

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, loadtest.Defaults().Prefix, stdout, stderr)
	f := loadtest.AddFlags(h) // the workload: -strategy, -workers, -wallets, -duration, ...
	if code, ok := h.Parse(args, func() []error { return f.Check(harness.CheckPageOf) }); !ok {
		return code
	}
	env, leftOut, code := f.Dial(ctx)
	if env == nil {
		return code
	}
	defer env.Close()

	// The lesson: the same spends made every way this repo shows, one
	// strategy after another on fresh wallets, one row each. Each way to
	// spend is a function of loadtest/strategy.go, side by side.
	rep, runErr := loadtest.Run(ctx, env, f.Config)
	if rep == nil { // it failed before anything was measured
		return h.Fail(runErr)
	}
	if !h.JSON() {
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
	// A correct balance is not enough: the history of a correct strategy
	// is linearizable too, every spend as if made one at a time.
	if err := rep.HistoryErr(); err != nil {
		r.Fail(stderr, err)
	}
	// A row that accepted nothing, or failed too often, proves nothing.
	if none := rep.Unmeasured(); len(none) > 0 && !rep.Interrupted {
		r.Fail(stderr, fmt.Errorf("measured nothing: %s", strings.Join(none, ", ")))
	}
	return f.Finish(ctx, r, rep, leftOut)
}
