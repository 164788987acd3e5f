// Workshop runs every step with settings short enough for a room full of
// laptops and prints one table: each phase, the verdict the tutorial
// promises (from package lesson), the verdict this machine gave, and
// whether they match. It exits 1 when any phase differs or a step fails.
// The steps are the root's six programs (cmd/step1-race ..
// cmd/step6-loadtest), built from the root's folder, then the lab's drill,
// briefly.
//
//	make workshop            # the table
//	make workshop JSON=1     # the table, and workshop-<host>.json for the facilitator, in the folder make ran in
//	go run ./cmd/workshop -json > my-laptop.json    # from lab/
//
// The JSON holds every phase's figures as each step reported them, the
// flags each step ran with, the revision of the lesson it was held to,
// plus the machine's host label (-host, the hostname by default) and its
// Go, Redis and PostgreSQL versions, so a room's results can be collected
// and compared. The facilitator puts the files side by side with
// -compare, which runs nothing and reads the files of earlier versions
// too:
//
//	make compare             # every workshop-*.json in the folder, into room.html
//	go run ./cmd/workshop -compare -html room.html workshop-*.json
//
// Ctrl-C is passed on to the step that is running, which stops, cleans up
// and reports what it measured; the workshop then prints the phases run so
// far and exits 130. A second Ctrl-C exits at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/workshop"
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

func main() { harness.Main(run) }

type options struct {
	json, save, compare bool
	host, html, prefix  string
}

func flags() (*flag.FlagSet, *options) {
	var o options
	fs := flag.NewFlagSet("workshop", flag.ContinueOnError)
	fs.BoolVar(&o.json, "json", false, "print one JSON document instead of the table")
	fs.StringVar(&o.host, "host", workshop.Hostname(), "this machine's label in the JSON and in the name of the file -save writes")
	fs.BoolVar(&o.save, "save", false, "print the table, and write the JSON to workshop-<host>.json for the facilitator")
	fs.BoolVar(&o.compare, "compare", false, "run nothing: compare the workshop JSON files named after the flags")
	fs.StringVar(&o.html, "html", "", "with -compare, also write the room's page to this file")
	fs.StringVar(&o.prefix, "prefix", "walletlock:workshop:", "where the run keeps its Redis keys and owns its PostgreSQL rows, under a tag of its own")
	return fs, &o
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, opt := flags()
	// The files -compare reads follow the flags. harness.Parse refuses
	// arguments, so it gets the flags alone: a second flag set, which
	// stops at the first file, tells where they end.
	probe, _ := flags()
	probe.SetOutput(io.Discard)
	var files []string
	if probe.Parse(args) == nil {
		files = probe.Args()
		args = args[:len(args)-len(files)]
	}
	if code, stop := harness.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	var bad error
	switch {
	case !opt.compare && len(files) > 0:
		bad = fmt.Errorf("unexpected argument %q (files go with -compare)", files[0])
	case opt.compare && len(files) == 0:
		bad = errors.New("-compare needs the workshop JSON files to read, e.g. -compare workshop-*.json")
	case !opt.compare && opt.html != "":
		bad = errors.New("-html goes with -compare: it writes the page of the files compared")
	case opt.compare && (opt.json || opt.save):
		bad = errors.New("-compare runs nothing, so it takes neither -json nor -save")
	case strings.TrimSpace(opt.host) == "":
		bad = errors.New("-host must not be empty: it names this machine on the facilitator's page")
	}
	var page error // a page that could not be written is refused before any file is read
	if opt.compare && opt.html != "" {
		page = charts.CheckPage(opt.html)
	}
	if code, stop := harness.Refuse(fs, stderr, bad, harness.CheckPrefix(opt.prefix), page); stop {
		return code
	}
	fail := func(err error) int { fmt.Fprintln(stderr, "workshop:", err); return 1 }
	if opt.compare { // the facilitator's side: the room's files, side by side
		if err := workshop.Compare(files, opt.html, stdout); err != nil {
			return fail(err)
		}
		return 0
	}

	doc, err := workshop.New(ctx, strings.TrimSpace(opt.host))
	if err != nil {
		return fail(err)
	}
	bin, err := workshop.Build(ctx, stderr)
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
	tag := opt.prefix + fmt.Sprintf("%08x", rand.Uint32()) + ":"
	ids := 2_000_000_000 + rand.Int64N(1_000_000_000)
	r := harness.NewReport("workshop") // every step's phases, held to the lesson
	failed := func(err error) {
		doc.Failures = append(doc.Failures, err.Error())
		r.Fail(stderr, err)
	}
	for _, p := range plan {
		if !opt.json {
			fmt.Fprintf(stderr, "workshop: running %s\n", p.step)
		}
		var args []string
		if p.args != nil {
			args = p.args(ids)
			doc.Args[p.step] = args
		}
		ran := workshop.RunStep(ctx, bin, p.step, tag+p.step+":", args, stderr)
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
				fmt.Fprintf(stderr, "workshop: %s did not exit within %v of Ctrl-C and was killed; what it wrote may be left: %s\n", p.step, harness.WaitDelay, workshop.Leftovers(tag))
			}
			break
		}
		if ran.Failed != nil {
			failed(ran.Failed)
		}
	}
	if doc.Interrupted == "" {
		for _, m := range workshop.Missing(r.Phases()) {
			failed(errors.New(m))
		}
	}

	doc.Finish(r.Phases())
	if opt.json {
		doc.WriteJSON(stdout)
	} else {
		doc.PrintTable(stdout)
	}
	if opt.save {
		if err := doc.Save(stderr); err != nil {
			return fail(err)
		}
	}
	if doc.Interrupted != "" {
		fmt.Fprintf(stderr, "workshop: interrupted by Ctrl-C during %s; the table shows the %d phases that ran in full\n", doc.Interrupted, len(doc.Phases))
		r.Interrupt()
	}
	return r.Finish(stdout, stderr, false) // 1 when a phase differs from the lesson or a step failed
}
