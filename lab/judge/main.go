package judge

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/harness"
)

// Main is a judging program of the locks adapters make: it judges the one
// -lock names (the first by default), chapter by chapter, and prints each
// verdict as soon as it is known. It exits 0 when no property failed, 1
// when one did or the judging could not run, 2 on bad flags, and 130 when
// Ctrl-C, SIGTERM or SIGHUP stopped it, once every holder process and
// server is gone; a second Ctrl-C exits at once. -h lists its flags.
//
// The same program runs as the judge's holder processes: call Main first
// thing in main.
func Main(adapters ...Adapter) {
	if a, ok := holderRole(adapters); ok {
		os.Exit(serve(a, os.Stdin, os.Stdout))
	}
	harness.Main(func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return mainWith(ctx, args, stdout, stderr, adapters)
	})
}

// holderRole reports whether this process was started as a holder, and
// of which adapter.
func holderRole(adapters []Adapter) (Adapter, bool) {
	name, ok := os.LookupEnv(holderEnv)
	if !ok {
		return Adapter{}, false
	}
	for _, a := range adapters {
		if a.Name == name {
			return a, true
		}
	}
	fmt.Fprintf(os.Stderr, "judge holder: no lock named %s in this program\n", safe.Quote(name))
	os.Exit(2)
	return Adapter{}, false
}

// flags are a judging program's command line.
type flags struct {
	lock string
	o    Options
	json bool
}

// chapterOf reads a chapter as -chapter takes it: its name, or the
// article's step that teaches it.
func chapterOf(s string) (string, bool) {
	for _, ch := range chapters {
		if s == ch.name || ch.step > 0 && s == strconv.Itoa(ch.step) {
			return ch.name, true
		}
	}
	return "", false
}

// chapterNames lists the chapters for an error: "lease (2), watchdog (3),
// fencing (5), faults, guards".
func chapterNames() string {
	var n []string
	for _, ch := range chapters {
		if ch.step > 0 {
			n = append(n, fmt.Sprintf("%s (%d)", ch.name, ch.step))
		} else {
			n = append(n, ch.name)
		}
	}
	return strings.Join(n, ", ")
}

// parseFlags reads a judging program's flags; its error is the one line
// to print, and the exit code is then 2.
func parseFlags(args []string, stderr io.Writer) (flags, error) {
	var f flags
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.lock, "lock", "", "the lock to judge, by name")
	chapter := fs.String("chapter", "", "judge only these chapters, comma-separated: "+chapterNames()+"; lease, watchdog, fencing and the quick faults when empty")
	fs.StringVar(chapter, "step", "", "the same as -chapter")
	only := fs.String("only", "", "judge only these properties, by id, comma-separated: "+propertyIDs())
	seed := fs.String("seed", "", "the schedule's seed; a fresh one when empty")
	fs.BoolVar(&f.json, "json", false, "print the report as one JSON document")
	fs.StringVar(&f.o.Page, "html", "", "write every check's timeline to this HTML `file`")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("judge: unexpected argument %s", safe.Quote(fs.Arg(0)))
	}
	if *chapter != "" {
		for _, s := range strings.Split(*chapter, ",") {
			name, ok := chapterOf(strings.TrimSpace(s))
			if !ok {
				return f, fmt.Errorf("judge: -chapter %s: the chapters are %s", safe.Quote(s), chapterNames())
			}
			f.o.Chapters = append(f.o.Chapters, name)
		}
	}
	if *only != "" {
		for _, id := range strings.Split(*only, ",") {
			i := slices.IndexFunc(properties, func(p property) bool { return p.id == id })
			if i < 0 {
				return f, fmt.Errorf("judge: -only %s: no such property; they are %s", safe.Quote(id), propertyIDs())
			}
			if len(f.o.Chapters) > 0 && !slices.Contains(f.o.Chapters, properties[i].chapter) {
				return f, fmt.Errorf("judge: -only %s is a property of the %s chapter, which -chapter leaves out", id, properties[i].chapter)
			}
			f.o.Only = append(f.o.Only, id)
		}
	}
	if *seed != "" {
		n, err := strconv.ParseInt(*seed, 10, 64)
		var ne *strconv.NumError
		switch {
		case errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange):
			return f, fmt.Errorf("judge: -seed %s is too large: a seed is a whole number up to %d", safe.Quote(*seed), int64(math.MaxInt64))
		case err != nil:
			return f, fmt.Errorf("judge: -seed %s is not a whole number", safe.Quote(*seed))
		}
		f.o.Seed = n
	}
	if f.o.Page != "" {
		if err := harness.CheckPageOf("judge: -html", f.o.Page); err != nil {
			return f, err
		}
	}
	return f, nil
}

// freshSeed draws a seed a person can type.
func freshSeed() int64 { return time.Now().UnixNano()%999_999 + 1 }

// propertyIDs lists the properties' ids, comma-separated.
func propertyIDs() string {
	var ids []string
	for _, p := range properties {
		ids = append(ids, p.id)
	}
	return strings.Join(ids, ", ")
}

// mainWith is Main's run: it judges the adapter -lock names among
// adapters, and returns the exit code.
func mainWith(ctx context.Context, args []string, stdout, stderr io.Writer, adapters []Adapter) int {
	f, err := parseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, safe.Line(err.Error()))
		}
		return 2
	}
	a := adapters[0]
	if f.lock != "" {
		i := slices.IndexFunc(adapters, func(b Adapter) bool { return b.Name == f.lock })
		if i < 0 {
			var names []string
			for _, b := range adapters {
				names = append(names, b.Name)
			}
			fmt.Fprintf(stderr, "judge: no lock %s here; the locks are %s\n", safe.Quote(f.lock), strings.Join(names, ", "))
			return 2
		}
		a = adapters[i]
	}
	if f.o.Seed == 0 {
		f.o.Seed = freshSeed()
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	wd, _ := os.Getwd()
	if note := removeLeftovers(); note != "" {
		fmt.Fprintln(stderr, safe.Line(note))
	}
	c := config{adapter: a, o: f.o, exe: exe, workDir: wd, note: func(s string) { fmt.Fprintln(stderr, safe.Line(s)) }}
	if !f.json {
		fmt.Fprintf(stdout, "judge: %s, seed %d (-seed %d replays this schedule)\n", a.Name, f.o.Seed, f.o.Seed)
		c.say = func(v Verdict) {
			fmt.Fprintln(stdout, safe.Line(v.Line()))
			for _, l := range v.Output {
				fmt.Fprintln(stdout, "         the lock printed, "+l)
			}
		}
	}
	rep, err := run(ctx, c)
	if f.o.Page != "" && len(rep.Verdicts) > 0 {
		if werr := harness.SavePage(f.o.Page, func(w io.Writer) error { return writePage(w, rep) }); werr != nil {
			fmt.Fprintln(stderr, safe.Line("judge: -html: "+werr.Error()))
		} else if !f.json {
			fmt.Fprintf(stdout, "timelines: %s\n", safe.Line(f.o.Page))
		}
	}
	if f.json {
		json.NewEncoder(stdout).Encode(rep)
	} else if len(rep.Verdicts) > 0 {
		fmt.Fprintf(stdout, "%s (%s)\n", rep.Count(), dur(rep.Took))
	}
	switch {
	case rep.Interrupted != "" || ctx.Err() != nil:
		fmt.Fprintf(stderr, "judge: stopped by %s before the judging ended: no verdict on the lock; every holder process and server is gone\n", harness.Why(ctx))
		return 130
	case err != nil:
		fmt.Fprintln(stderr, safe.Line(err.Error()))
		return 1
	case rep.Failed():
		return 1
	}
	return 0
}
