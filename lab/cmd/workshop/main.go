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
	"strings"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/workshop"
)

func main() { harness.Main(run) }

type options struct {
	json, save, compare bool
	host, html, prefix  string
	serve, race         bool   // the live room; the race, with it or on a laptop
	addr, room, lock    string // where it listens; the join line; the race's lock
	round               time.Duration
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
	fs.BoolVar(&o.serve, "serve", false, "run the live room: serve the room's page and take the laptops' documents (the files named after the flags are read beside the folder's)")
	fs.StringVar(&o.addr, "addr", "", "with -serve, the `host:port` the room listens on, and nothing else; empty: this machine's address on its network, port 8080")
	fs.StringVar(&o.room, "room", "", "the room's join `line` (make room prints it): hand the document in to the room as well as writing it; with -race, join its race")
	fs.BoolVar(&o.race, "race", false, "with -serve, also run the race of the room's locks; with -room, join it with -lock")
	fs.StringVar(&o.lock, "lock", "lock", "with -race and -room, the lock to race: the folder of a package with the root lock's API, or mutant:NAME")
	fs.DurationVar(&o.round, "round", 30*time.Second, "with -serve -race, the length of each of the race's two rounds")
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
	case !opt.compare && !opt.serve && len(files) > 0:
		bad = fmt.Errorf("unexpected argument %q (files go with -compare or -serve)", files[0])
	case opt.serve && (opt.compare || opt.json || opt.save || opt.room != ""):
		bad = errors.New("-serve runs the room, so it takes neither -compare, -json, -save nor -room")
	case opt.race && !opt.serve && opt.room == "":
		bad = errors.New("-race joins the race of the room on -room's join line (make race ROOM=...), or runs one with -serve (make room RACE=1)")
	case opt.race && !opt.serve && (opt.compare || opt.json || opt.save):
		bad = errors.New("-race runs the race alone, so it takes neither -compare, -json nor -save")
	case opt.round < 5*time.Second:
		bad = fmt.Errorf("-round %v: a round of the race lasts 5s or more, so that the room's stop can happen in it", opt.round)
	case !opt.serve && opt.addr != "":
		bad = errors.New("-addr goes with -serve: it is where the room listens")
	case opt.compare && opt.room != "":
		bad = errors.New("-compare runs nothing, so it has no document to hand in with -room")
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
		page = harness.CheckPageOf("-html", opt.html)
	}
	if code, stop := harness.Refuse(fs, stderr, bad, harness.CheckPrefix(opt.prefix), page); stop {
		return code
	}
	if opt.compare { // the facilitator's side: the room's files, side by side
		if err := workshop.Compare(files, opt.html, stdout); err != nil {
			fmt.Fprintln(stderr, "workshop:", err)
			return 1
		}
		return 0
	}
	if opt.serve {
		return serve(ctx, opt, files, stdout, stderr)
	}
	if opt.race {
		return race(ctx, opt, stdout, stderr)
	}
	return workshop.Run(ctx, strings.TrimSpace(opt.host), opt.prefix, opt.room, opt.json, opt.save, stdout, stderr)
}
