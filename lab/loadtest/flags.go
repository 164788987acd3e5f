package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/term"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/redlock"
)

// Resolve completes c from the two flags that are not plain fields,
// -workers (one count, or a list of counts for a contention sweep) and
// -strategy, gives c the first wallet id of its prefix when FirstID is 0
// (ledger.FirstIDFor), and validates it. Its error matches ErrBadConfig.
func (c *Config) Resolve(workers, strategies string) error {
	if c.FirstID == 0 {
		c.FirstID = ledger.FirstIDFor(c.Prefix)
	}
	counts, err := ParseWorkers(workers)
	if err != nil {
		return err
	}
	if len(counts) > 1 {
		c.Sweep = counts
	} else {
		c.Workers = counts[0]
	}
	if c.Strategies, err = ParseStrategies(strategies); err != nil {
		return err
	}
	return c.Validate()
}

// ProgressTo returns w when it is a terminal, for Config.Progress, and nil
// otherwise: a progress bar only where someone watches, never in a pipe or
// a file.
func ProgressTo(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return w
	}
	return nil
}

// Flags is cmd/loadtest's command line on a harness program: the workload's
// flags, beside the -prefix and -json every program has.
type Flags struct {
	Config
	HTML, History string // -html and -history: pages to write, "" for none

	p                *harness.Program
	strategy, counts string
}

// AddFlags adds the workload's flags to p, with Defaults as their
// defaults, and says what -prefix and -json mean here.
func AddFlags(p *harness.Program) *Flags {
	f := &Flags{Config: Defaults(), p: p}
	c, fs := &f.Config, p.Flags
	fs.Lookup("prefix").Usage = "prefix of the Redis keys this run writes, and owner of its PostgreSQL rows"
	fs.Lookup("json").Usage = "print the whole report as one JSON object"
	fs.StringVar(&f.strategy, "strategy", "all", "all, or one or more of "+strings.Join(Strategies(), ",")+" (comma-separated)")
	fs.IntVar(&c.Wallets, "wallets", c.Wallets, fmt.Sprintf("wallets to spend from, at most %d", MaxWallets))
	fs.StringVar(&f.counts, "workers", fmt.Sprint(c.Workers), fmt.Sprintf("concurrent spenders, at most %d; a `list` such as 2,8,50 runs every strategy at each count\n(at most %d counts): the contention sweep", MaxWorkers, MaxLevels))
	fs.DurationVar(&c.Duration, "duration", c.Duration, "how long each strategy runs")
	fs.Int64Var(&c.Ops, "ops", c.Ops, "stop each strategy after this many spends, or at -duration if that comes first (0: no limit)")
	fs.DurationVar(&c.Work, "work", c.Work, "time between the read and the write of a spend")
	fs.Int64Var(&c.Amount, "amount", c.Amount, "amount each spend takes")
	fs.Int64Var(&c.Initial, "initial", c.Initial, "starting balance of every wallet")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the workers' wallet picks")
	fs.BoolVar(&c.Hot, "hot", c.Hot, "send every spend to one wallet")
	fs.IntVar(&c.Pool, "pool", c.Pool, fmt.Sprintf("connections per pool, 1 to %d (PostgreSQL's at most %d); 0 sizes them to the workers,\nat most %d for Redis", MaxPool, MaxPostgresConns, MaxRedisConns))
	fs.DurationVar(&c.TTL, "ttl", c.TTL, "lease of the Redis locks, at least 1ms")
	fs.DurationVar(&c.Timeout, "timeout", c.Timeout, "longest a spend may take, waiting for its lock included")
	fs.Int64Var(&c.FirstID, "first-id", 0, "first PostgreSQL wallet id this run uses; 0 derives one from -prefix, so that runs\nwith different prefixes never share a wallet (ids another run holds are refused)")
	fs.StringVar(&f.HTML, "html", "", "also write the report, with charts, as one HTML page to this file")
	fs.Lookup("history").Usage = "also write the histories, a window of one wallet per strategy, as porcupine's HTML page to this file"
	return f
}

// Check completes the Config from the flags once they are parsed
// (Resolve), for the harness's checks: an error is one line, without
// ErrBadConfig's words. checkPage refuses a page (-html) that
// could not be written, before any work (harness.CheckPageOf).
func (f *Flags) Check(checkPage func(flag, path string) error) []error {
	f.Prefix = f.p.Prefix()
	errs := []error{trimBad(f.Resolve(f.counts, f.strategy))}
	if f.HTML != "" {
		errs = append(errs, checkPage("-html", f.HTML))
	}
	// -history is the harness's flag (every program has it), checked there.
	if f.History = f.p.Flags.Lookup("history").Value.String(); f.History != "" {
		f.Config.History = HistoryPage
	}
	return errs
}

func trimBad(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(strings.TrimPrefix(err.Error(), ErrBadConfig.Error()+": "))
}

// Dial dials the services of the strategies chosen. A default run (-strategy
// all) goes on without Redlock when its nodes do not answer
// (redlock.ErrNodesDown), and says so: they come from `make redlock-up`,
// not `make up`. It returns what it left out, with why; with a nil Env it
// has told the user why it cannot go on, and returns the exit code.
func (f *Flags) Dial(ctx context.Context) (env *Env, leftOut map[string]string, code int) {
	f.Progress = ProgressTo(f.p.Stderr) // a bar only on a terminal
	env, err := Dial(ctx, f.Config)
	if f.strategy == "all" && errors.Is(err, redlock.ErrNodesDown) {
		leftOut = map[string]string{Redlock: err.Error()}
		fmt.Fprintf(f.p.Stderr, "%s: leaving %s out: %s\n", f.p.Step, Redlock, err)
		f.Strategies = slices.DeleteFunc(f.Strategies, func(s string) bool { return s == Redlock })
		env, err = Dial(ctx, f.Config)
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, leftOut, f.Interrupted(false)
	case errors.Is(err, ErrBadConfig): // REDLOCK_ADDRS naming one node twice
		fmt.Fprintln(f.p.Stderr, f.p.Step+":", trimBad(err))
		return nil, leftOut, 2
	case err != nil:
		fmt.Fprintln(f.p.Stderr, f.p.Step+":", err)
		return nil, leftOut, 1
	}
	if env.Redlock != nil && env.Redlock.Degraded() != "" { // a minority down: Redlock runs
		fmt.Fprintln(f.p.Stderr, f.p.Step+":", env.Redlock.Degraded())
	}
	return env, leftOut, 0
}

// Interrupted says that Ctrl-C came, after some strategies were measured
// or before the first ran, and returns the exit code after Ctrl-C.
func (f *Flags) Interrupted(measured bool) int {
	if measured {
		fmt.Fprintln(f.p.Stderr, f.p.Step+": interrupted by Ctrl-C; the last row counts only the spends made before it")
	} else {
		fmt.Fprintln(f.p.Stderr, f.p.Step+": interrupted by Ctrl-C before the first strategy ran")
	}
	return harness.ExitInterrupted
}

// Finish ends a run judged in r: it adds rep's figures to r beside the
// phases (-json) and what was left out, writes the pages asked for
// (-html, charts.SaveLoad; -history, whose checks stop when ctx ends),
// names what could not be deleted, says whether Ctrl-C came, and returns
// r's exit code.
func (f *Flags) Finish(ctx context.Context, r *harness.Report, rep *Report, leftOut map[string]string) int {
	if err := r.SetAll(rep); err != nil {
		r.Fail(f.p.Stderr, err)
	}
	if len(leftOut) > 0 {
		r.Set("left_out", leftOut) // the workshop reads it: not run is not missing
	}
	if f.HTML != "" {
		if err := savePage(f.HTML, rep); err != nil {
			r.Fail(f.p.Stderr, err)
		}
	}
	if f.History != "" {
		harness.WriteHistoryPage(ctx, r, f.p.Stderr, f.History, rep.Histories())
	}
	if rep.Leftovers != nil {
		fmt.Fprintln(f.p.Stderr, f.p.Step+":", rep.Leftovers)
	}
	if rep.Interrupted {
		r.Interrupt()
		f.Interrupted(len(rep.Rows) > 0)
	}
	return r.Finish(f.p.Stdout, f.p.Stderr, f.p.JSON())
}

// savePage writes rep to path as one HTML page (charts.SaveLoad), from its
// JSON form, the one the page reads in every run's file.
func savePage(path string, rep *Report) error {
	data, err := json.Marshal(rep)
	if err != nil {
		return fmt.Errorf("loadtest: write %s: %w", path, err)
	}
	return charts.SaveLoad(path, data, rep.PoolLine())
}
