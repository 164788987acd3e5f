package redislockx

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// Strategy is one retry strategy to compare. Fresh makes a new value for
// each Obtain: redislock's ExponentialBackoff counts its retries inside the
// value, so one shared by many spenders would make each one's waits depend
// on the others'.
type Strategy struct {
	Name, Retry string // Retry says what it is: "LinearBackoff(10ms)"
	Fresh       func() redislock.RetryStrategy
}

// Setting is what step 4's flags set.
type Setting struct {
	N               int // spenders per burst
	Work, TTL, Wait time.Duration
	Prefix          string
}

// Check refuses a setting the program cannot run, in one line: the first
// problem found (the harness checks -prefix). A TTL under 1 ms is refused before anything runs:
// redislock v0.10.0 would take -ttl 0 and return a lock Redis never kept.
func (c Setting) Check() error {
	var bounds, ttl error
	if c.N < 1 || c.Work < 0 || c.Wait <= 0 {
		bounds = errors.New("-n must be at least 1, -work at least 0 and -wait above 0")
	}
	if err := lock.CheckTTL(c.TTL); err != nil {
		ttl = fmt.Errorf("-ttl: %w", err)
	}
	return cmp.Or(bounds, ttl, harness.CheckMax("-n", c.N, harness.MaxN),
		harness.CheckDuration("-work", c.Work), harness.CheckDuration("-ttl", c.TTL), harness.CheckDuration("-wait", c.Wait))
}

// Compare runs step 4's comparison for the program p: it connects to
// Redis, takes the run lease on c.Prefix, so that a second run on it is
// refused instead of mixed in, and runs one burst of c.N spenders per
// strategy, each calling spend, on a fresh balance of initial at
// balanceKey, with the lock at lockKey. It prints each check line (unless
// -json), then the table, and returns the report's exit code.
func Compare(ctx context.Context, p *harness.Program, c Setting, balanceKey, lockKey string, initial, amount int64,
	strategies []Strategy, spend func(ctx context.Context, rdb redis.UniversalClient, run *Run, st Strategy) (bool, error)) int {
	rdb, err := services.Connect(ctx)
	if err != nil {
		return p.Fail(err)
	}
	defer rdb.Close()
	s, err := harness.Start(ctx, rdb, p.Step, c.Prefix)
	if err != nil {
		return p.Fail(err)
	}
	defer s.Close(p.Stderr, balanceKey, lockKey)
	r := harness.NewReport(p.Step)
	b := Bench{Setting: c, Step: p.Step, Session: s, Redis: rdb, BalanceKey: balanceKey, LockKey: lockKey, Initial: initial, Amount: amount}
	for _, st := range strategies {
		// Burst hands each spend the session's context (it ends at Ctrl-C),
		// carrying what the history needs to record the spend.
		run, balance, err := b.Burst(st, func(ctx context.Context, run *Run) (bool, error) { return spend(ctx, rdb, run, st) })
		if err != nil {
			return p.Fail(err)
		}
		if run == nil {
			break // Ctrl-C, and nothing left to check
		}
		run.Verdict = wallet.CheckUnknown(initial, amount, run.Tally.Accepted, run.Tally.Unknown, balance)
		run.Linearizable = harness.CheckHistory(s.Context(), run.History, wallet.DemoWallet, run.Verdict) // unknown after Ctrl-C
		if !p.JSON() {
			run.PrintCheck(p.Stdout)
		}
		if err := run.Problem(); err != nil {
			r.Fail(p.Stderr, err)
		}
		if run.Cut {
			break // measured, but not what the lesson is about: b.Report says so
		}
		r.AddChecked(st.Name, run.Verdict, run.Linearizable, nil)
		p.Keep(st.Name, run.Linearizable)
	}
	b.Report(r, p.Stdout, p.Stderr, p.JSON())
	return p.Finish(s.Context(), r)
}

// Bench runs one burst of spenders per strategy within a harness.Session, on
// a fresh balance each time, and keeps what each measured for the table
// and the JSON. After Ctrl-C it stops and says where (Stopped).
type Bench struct {
	Setting
	Step            string // the program's name, for its messages
	Session         *harness.Session
	Redis           redis.UniversalClient
	BalanceKey      string // set to Initial before each burst
	LockKey         string // deleted before each burst: a lease left by a run that died
	Initial, Amount int64

	runs    []*Run
	stopped string
}

// Burst runs b.N spenders, each calling spend, and reads back the balance
// and Redis's command counts, after Ctrl-C too. It returns the run and the
// balance; the caller judges them and sets run.Verdict.
//
// After Ctrl-C it returns a nil run and no error when nothing is left to
// check: the burst never started, Redis did not answer in time, or the
// balance could not be read back. A run that Ctrl-C cut short but that
// was read back is returned with Cut set. The error is for Redis failing
// otherwise, or the session losing its lease.
func (b *Bench) Burst(st Strategy, spend func(context.Context, *Run) (bool, error)) (*Run, int64, error) {
	strategy, s := st.Name, b.Session
	if s.Interrupted() {
		b.stopped = "before " + strategy
		return nil, 0, nil
	}
	ctx := s.Context()
	// After Ctrl-C, spenders stuck on a frozen Redis are not waited for.
	m, done := harness.Await(s, func() measured {
		if err := b.Redis.Del(ctx, b.LockKey).Err(); err != nil {
			return measured{err: fmt.Errorf("redis: delete %s: %w", b.LockKey, err)}
		}
		if err := wallet.Set(ctx, b.Redis, b.BalanceKey, b.Initial); err != nil {
			return measured{err: err}
		}
		run := Start(ctx, b.Redis, st.Name, st.Retry)
		run.History = history.NewRecorder(0) // every spend recorded
		run.History.Set(wallet.DemoWallet, b.Initial)
		run.Stop(ctx, wallet.Hammer(b.N, func(i int) (bool, error) {
			return run.History.Spend(ctx, wallet.DemoWallet, i, b.Amount, func(ctx context.Context) (bool, error) { return spend(ctx, run) })
		}))
		return measured{run: run}
	})
	if ctx.Err() != nil && !s.Interrupted() {
		return nil, 0, context.Cause(ctx) // the run lease was lost
	}
	var balance int64
	if done && m.err == nil {
		rctx, cancel := s.Cleanup() // read back even after Ctrl-C
		balance, m.err = m.run.ReadBack(rctx, b.Redis, b.BalanceKey)
		cancel()
	}
	switch {
	case s.Interrupted() && (!done || m.run == nil):
		b.stopped = "during " + strategy + ": Redis did not answer in time, nothing was measured"
		return nil, 0, nil
	case s.Interrupted() && m.err != nil:
		b.stopped = fmt.Sprintf("during %s: %d spends accepted; the balance could not be read back to check them (%s)",
			strategy, m.run.Tally.Accepted, harness.OneLine(m.err))
		return nil, 0, nil
	case m.err != nil:
		return nil, 0, m.err
	case m.run.Cut:
		b.stopped = "during " + strategy + ": its row counts only the spends made before it"
	}
	b.runs = append(b.runs, m.run)
	return m.run, balance, nil
}

// measured is what one burst gave, for harness.Await.
type measured struct {
	run *Run
	err error
}

// Stopped says where Ctrl-C stopped the comparison: before or during
// which strategy, or after the last one.
func (b *Bench) Stopped() string {
	if b.stopped == "" {
		return "after the last strategy"
	}
	return b.stopped
}

// Report adds the setting, Note and every run's Figures to r, and unless
// asJSON prints the table. After Ctrl-C it records the run that Ctrl-C cut
// short as r's interrupted phase, and says on stderr where it stopped.
func (b *Bench) Report(r *harness.Report, stdout, stderr io.Writer, asJSON bool) {
	figures := []Figures{}
	for _, run := range b.runs {
		figures = append(figures, run.Figures())
		if run.Cut {
			r.Interrupted(run.Strategy, run.Verdict, nil)
		}
	}
	if b.Session.Interrupted() {
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C %s\n", b.Step, b.Stopped())
		r.Interrupt()
	}
	r.Set("n", b.N)
	r.Set("work", b.Work.String())
	r.Set("ttl", b.TTL.String())
	r.Set("wait", b.Wait.String())
	r.Set("note", Note)
	r.Set("strategies", figures)
	r.Set("prefix", b.Prefix)
	if !asJSON && len(b.runs) > 0 {
		Table(stdout, fmt.Sprintf("%d spenders, %d each from %d, work %v, ttl %v, wait at most %v.",
			b.N, b.Amount, b.Initial, b.Work, b.TTL, b.Wait), b.runs)
	}
}
