// Package step is what every step program does alike, so that its main.go
// holds the lesson: -prefix and -json, Ctrl-C, a lease on the run's keys,
// the check line held to the lesson, the clean-up and the exit code.
package step

import (
	"context"
	"encoding/json"
	"flag"
	"hash/fnv"
	"log"
	"os"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/wallet"
)

// Run is one run of a step program.
type Run struct {
	Ctx      context.Context // ends at Ctrl-C, SIGTERM, SIGHUP, a closed output, or a lost lease
	Redis    redis.UniversalClient
	Prefix   string // -prefix, put in front of every key; "" by default
	Owner    string // the run's lease key, and its name for the rows it owns
	name     string
	json     bool
	keys     []string
	atEnd    []func(context.Context) error
	phases   []Result
	doc      map[string]any
	giveBack func(context.Context) // the run's lease
}

// Begin parses the flags, -prefix and -json among them, connects to Redis
// and takes the run's lease, <prefix>walletlock:run, for the whole run. A
// bad flag exits 2; no Redis, or another run on the prefix, exits 1.
func Begin(name string) *Run {
	r := &Run{name: name, doc: map[string]any{"step": name}}
	os.Args[0] = name // -h says "Usage of step2-lock:", not the path go run built it at
	flag.StringVar(&r.Prefix, "prefix", "", "put this in front of every key the run writes: letters, digits and :_.-")
	flag.BoolVar(&r.json, "json", false, "print one JSON document instead of the text")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix(name + ": ")
	log.SetOutput(safe.Writer{W: os.Stderr}) // one line each, escaped: a server's words are not ours to trust
	checkFlags()
	r.Ctx = stopOnSignals()
	var err error
	r.Redis, err = wallet.Connect(r.Ctx)
	r.Must(err)
	r.Owner = r.Prefix + "walletlock:run"
	run, giveBack, err := hold(r.Ctx, r.Redis, r.Owner, r.Prefix)
	r.Must(err)
	r.Ctx, r.giveBack = run, giveBack
	return r
}

// Key is prefix+key, a key the run deletes as it ends.
func (r *Run) Key(key string) string {
	if !slices.Contains(r.keys, r.Prefix+key) {
		r.keys = append(r.keys, r.Prefix+key)
	}
	return r.Prefix + key
}

// ID is the run's row for wallet id: id without a -prefix, and a number of
// the prefix's own with one, so that runs never share a row.
func (r *Run) ID(id int64) int64 {
	if r.Prefix == "" {
		return id
	}
	h := fnv.New64a()
	h.Write([]byte(r.Prefix))
	return 1<<40 + int64(h.Sum64()%(1<<28))<<12 + id%(1<<12)
}

// AtEnd has the run call clean as it ends, to delete its rows.
func (r *Run) AtEnd(clean func(context.Context) error) { r.atEnd = append(r.atEnd, clean) }

// Check prints a phase's check line and holds it to want, the verdict the
// lesson promises; given an error, the run fails.
func (r *Run) Check(phase, want string, v wallet.Verdict, err error) {
	r.Must(err)
	check := v.String()
	res := Result{r.name, phase, check, check[strings.LastIndexByte(check, ' ')+1:], want}
	r.phases = append(r.phases, res)
	if len(v.Errors) > 0 {
		log.Printf("%sspends that failed: %d, the first with: %v", label(r.name, phase), len(v.Errors), v.Errors[0])
	}
	if !r.json {
		say(label(r.name, phase) + res.Check)
	}
}

// End prints the JSON document with -json, cleans up, and exits: 0 when
// every phase gave the verdict the lesson promises, 1 when one did not or
// its output could not be written.
func (r *Run) End() {
	if r.json {
		r.doc["prefix"], r.doc["phases"] = r.Prefix, r.phases
		b, _ := json.MarshalIndent(r.doc, "", "  ")
		say(string(b))
	}
	r.Must(context.Cause(r.Ctx))
	r.clean()
	if slices.ContainsFunc(r.phases, func(p Result) bool { return p.Verdict != p.Want }) {
		os.Exit(1)
	}
	os.Exit(0)
}

// Must ends the run when err is not nil: it says why the run cannot go
// on, cleans up and exits 1, or 130 after Ctrl-C.
func (r *Run) Must(err error) {
	if err == nil {
		return
	}
	if cause := context.Cause(r.Ctx); cause != nil {
		err = cause // Ctrl-C, or the run's lease lost: that is the news
	}
	log.Print(err)
	r.clean()
	if signalled.Err() != nil {
		os.Exit(130)
	}
	os.Exit(1)
}
