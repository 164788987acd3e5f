package judge

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/drill"
	"example.com/walletlock/lab/internal/harness"
)

// Holder runs this process as a holder and exits, when the judge started
// it as one; otherwise it returns at once. A program that judges calls it
// first thing in main, with every adapter it may judge.
func Holder(adapters ...Adapter) {
	if c, ok := drill.SpenderRole(); ok {
		os.Exit(drillSpender(c, adapters))
	}
	v, ok := os.LookupEnv(holderEnv)
	if !ok {
		return
	}
	var c holderConfig
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		fmt.Fprintln(os.Stderr, "judge holder: bad", holderEnv)
		os.Exit(2)
	}
	for _, a := range adapters {
		if a.Name == c.Lock {
			os.Exit(serveHolder(c, a, os.Stdin, os.Stdout))
		}
	}
	fmt.Fprintf(os.Stderr, "judge holder: no lock named %q in this program\n", c.Lock)
	os.Exit(2)
}

// Main is a judging program: it judges the adapter that -lock names (the
// first by default) and exits 0 when no property failed, 1 when one did,
// 2 on bad flags, 130 after Ctrl-C, once every process and row is gone.
func Main(adapters ...Adapter) {
	Holder(adapters...)
	harness.Main(func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return MainWith(ctx, args, stdout, stderr, adapters)
	})
}

// Flags are the command line of a judging program.
type Flags struct {
	Lock  string
	Steps []int
	Only  []string
	Seed  int64
	JSON  bool
	HTML  string
	Root  string // the repo, where a -lock path is read from

	Exercise string // -exercise N: stub step N's functions in the root's lock/
	Matrix   string // -matrix FILE: judge every lock and mutant, write the table
}

// ParseFlags reads the judge's flags from args; its error is the one line
// to print, and the exit code is then 2.
func ParseFlags(args []string, stderr io.Writer) (Flags, error) {
	var f Flags
	fs := flag.NewFlagSet("judge", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.Lock, "lock", "", "the lock to judge")
	step := fs.String("step", "", "judge only these chapters: 2, 3, 5, faults, guards (comma-separated); all but the failover, the partition and the guards when empty")
	only := fs.String("only", "", "judge only these properties, by id (comma-separated)")
	seed := fs.String("seed", "", "the schedule's seed; a fresh one when empty")
	fs.BoolVar(&f.JSON, "json", false, "print the report as JSON")
	fs.StringVar(&f.HTML, "html", "", "write the timelines of the checks to this HTML file")
	fs.StringVar(&f.Exercise, "exercise", "", "turn step `N`'s functions in the root's lock/ into stubs (2, 3 or 5)")
	fs.StringVar(&f.Matrix, "matrix", "", "judge every lock and mutant and write the matrix to this Markdown `file`")
	fs.StringVar(&f.Root, "root", "", "the repo's folder, where -lock ./path is read from (the root module's, by default)")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("judge: unexpected argument %s", safe.Quote(fs.Arg(0)))
	}
	for _, s := range strings.FieldsFunc(*step, func(r rune) bool { return r == ',' || r == ' ' }) {
		switch s {
		case "2", "3", "5":
			n, _ := strconv.Atoi(s)
			f.Steps = append(f.Steps, n)
		case "4", "faults":
			f.Steps = append(f.Steps, 4)
		case "6", "guards":
			f.Steps = append(f.Steps, 6)
		default:
			return f, fmt.Errorf("judge: -step %s: the chapters are 2, 3 and 5, faults and guards", safe.Quote(s))
		}
	}
	if *only != "" {
		f.Only = strings.Split(*only, ",")
		for _, id := range f.Only {
			if !slices.ContainsFunc(properties, func(p property) bool { return p.id == id }) {
				return f, fmt.Errorf("judge: -only %s: no such property; they are %s", safe.Quote(id), PropertyIDs())
			}
		}
	}
	if *seed == "" {
		f.Seed = time.Now().UnixNano() % 1_000_000
	} else {
		n, err := strconv.ParseInt(*seed, 10, 64)
		if err != nil {
			return f, fmt.Errorf("judge: -seed %s is not a whole number", safe.Quote(*seed))
		}
		f.Seed = n
	}
	return f, nil
}

// MainWith is Main's run: it judges the adapter -lock names among
// adapters, and returns the exit code.
func MainWith(ctx context.Context, args []string, stdout, stderr io.Writer, adapters []Adapter) int {
	f, err := ParseFlags(args, stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(stderr, err)
		}
		return 2
	}
	a := adapters[0]
	if f.Lock != "" {
		found := false
		var names []string
		for _, b := range adapters {
			names = append(names, b.Name)
			if b.Name == f.Lock {
				a, found = b, true
			}
		}
		if !found {
			fmt.Fprintf(stderr, "judge: no lock %s here; the locks are %s\n", safe.Quote(f.Lock), strings.Join(names, ", "))
			return 2
		}
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	return Judge(ctx, Config{Adapter: a, Steps: f.Steps, Only: f.Only, Seed: f.Seed, Exe: exe}, f, stdout, stderr)
}

// Judge runs c and prints what it found as the flags ask; it returns the
// exit code.
func Judge(ctx context.Context, c Config, f Flags, stdout, stderr io.Writer) int {
	if !f.JSON {
		fmt.Fprintf(stdout, "judge: %s, seed %d (SEED=%d replays this schedule)\n", c.Adapter.Name, c.Seed, c.Seed)
		c.Say = func(v Verdict) { fmt.Fprintln(stdout, v.Line()) }
	}
	rep, err := Run(ctx, c)
	if f.HTML != "" && len(rep.Verdicts) > 0 {
		if werr := WritePage(f.HTML, rep); werr != nil {
			fmt.Fprintln(stderr, werr)
		} else if !f.JSON {
			fmt.Fprintf(stdout, "timelines: %s\n", f.HTML)
		}
	}
	if f.JSON {
		json.NewEncoder(stdout).Encode(rep)
	} else if len(rep.Verdicts) > 0 {
		fmt.Fprintf(stdout, "%s (%s)\n", rep.Count(), dur(rep.Took))
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(stderr, "judge: stopped by %s; every holder process and server is gone\n", harness.Why(ctx))
		return 130
	case err != nil:
		fmt.Fprintln(stderr, safe.Line(err.Error()))
		return 1
	case rep.Failed():
		return 1
	}
	return 0
}

// PropertyIDs lists the properties' ids, comma-separated.
func PropertyIDs() string {
	var ids []string
	for _, p := range properties {
		ids = append(ids, p.id)
	}
	return strings.Join(ids, ", ")
}
