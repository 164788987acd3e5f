package workshop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
)

// plan is what the workshop runs, in tutorial order, each step briefly:
// the root's steps with their defaults but step 6, which runs 1 s per
// strategy, and the drill (lab: a program of the lab's module). Each also
// gets -json and a -prefix of its own (see RunStep); the drill also gets
// wallet ids of its own from ids, which the root's steps derive from
// their prefix. Step 6's flags are all given, so that the saved document
// says its whole load (Doc.Args).
var plan = []struct {
	step string
	lab  bool
	args func(ids int64) []string
}{
	{"step1-race", false, nil},
	{"step2-lock", false, nil},
	{"step3-ttl", false, nil},
	{"step4-redislock", false, nil},
	{"step5-fencing", false, nil},
	{"step6-loadtest", false, func(int64) []string {
		return []string{"-workers", "16", "-wallets", "4", "-work", "1ms", "-duration", "1s"}
	}},
	// The drill's two sharpest cells, one seed each: real processes, a
	// paused holder and a Redis restarted empty, against lock and fenced.
	{lesson.DrillStep, true, func(ids int64) []string {
		return []string{"-nemesis", "pause,restart", "-strategy", "lock,fenced", "-seeds", "1", "-first-id", strconv.FormatInt(ids+2000, 10)}
	}},
}

// Run runs the plan on this machine, labelled host, under keys and rows
// of prefix: the table on stdout (the JSON document with asJSON), the
// document in workshop-<host>.json too with save, and handed in to the
// live room on the join line room, unless it is "". It returns the exit
// code: 1 when a phase differs from the lesson or a step failed, 130 after
// Ctrl-C (ctx ended).
func Run(ctx context.Context, host, prefix, room string, asJSON, save bool, stdout, stderr io.Writer) int {
	fail := func(err error) int { fmt.Fprintln(stderr, "workshop:", err); return 1 }
	doc, err := New(ctx, host)
	if err != nil {
		return fail(err)
	}
	bin, err := Build(ctx, stderr)
	switch {
	case err != nil && ctx.Err() != nil:
		fmt.Fprintln(stderr, "workshop: interrupted by Ctrl-C while building the steps; nothing ran")
		return harness.ExitInterrupted
	case err != nil:
		return fail(err)
	}
	defer os.RemoveAll(bin)

	// A room may share one Redis and one PostgreSQL. Two laptops running the
	// workshop at once must not spend from each other's wallets, or both
	// would see lost updates that no lock could prevent: every run gets
	// keys and wallet ids of its own.
	tag := prefix + fmt.Sprintf("%08x", rand.Uint32()) + ":"
	ids := 2_000_000_000 + rand.Int64N(1_000_000_000)
	r := harness.NewReport("workshop") // every step's phases, held to the lesson
	failed := func(err error) {
		doc.Failures = append(doc.Failures, err.Error())
		r.Fail(stderr, err)
	}
	for _, p := range plan {
		if !asJSON {
			fmt.Fprintf(stderr, "workshop: running %s\n", p.step)
		}
		var args []string
		if p.args != nil {
			args = p.args(ids)
			doc.Args[p.step] = args
		}
		ran := RunStep(ctx, bin, p.step, tag+p.step+":", args, stderr)
		if ran.Out != nil {
			doc.Steps[p.step] = ran.Out
		}
		for _, res := range ran.Phases {
			r.AddResult(res)
		}
		if ctx.Err() != nil {
			// The step had its Ctrl-C and named what it could not clean up,
			// unless it took too long and was killed.
			doc.Interrupted = p.step
			if ran.Killed {
				fmt.Fprintf(stderr, "workshop: %s did not exit within %v of Ctrl-C and was killed; what it wrote may be left: %s\n", p.step, harness.WaitDelay, Leftovers(tag))
			}
			break
		}
		if ran.Failed != nil {
			failed(ran.Failed)
		}
	}
	if doc.Interrupted == "" {
		for _, m := range Missing(r.Phases()) {
			failed(errors.New(m))
		}
	}

	doc.Finish(r.Phases())
	if asJSON {
		doc.WriteJSON(stdout)
	} else {
		doc.PrintTable(stdout)
	}
	if save {
		if err := doc.Save(stderr); err != nil {
			return fail(err)
		}
	}
	if room != "" { // the file is written; the room's is a second copy
		if err := SendDoc(ctx, room, doc); err != nil {
			fmt.Fprintf(stderr, "workshop: not handed in to the room: %v; hand the file in by hand instead\n", err)
		} else {
			fmt.Fprintln(stderr, "workshop: handed in to the room: it is on the facilitator's page")
		}
	}
	if doc.Interrupted != "" {
		fmt.Fprintf(stderr, "workshop: interrupted by Ctrl-C during %s; the table shows the %d phases that ran in full\n", doc.Interrupted, len(doc.Phases))
		r.Interrupt()
	}
	return r.Finish(stdout, stderr, false) // 1 when a phase differs from the lesson or a step failed
}
