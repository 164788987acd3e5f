package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/redlock"
	"example.com/walletlock/lab/lock/fair"
	"example.com/walletlock/wallet"
)

// settleTimeout bounds reading back the balances after a phase, and the
// clean-up after the run, while the run has not been interrupted (twice
// the longest set-up, if that is more: a million wallets take a while).
// Tests shorten it.
var settleTimeout = 10 * time.Second

// stopBudget is what the run may take after ctx ends (Ctrl-C): the spends
// in flight must end within its first third, reading back the balances
// within half of it, deleting the keys and rows within five sixths (at
// 100,000 wallets that takes most of a second on a busy machine). The
// rest, and whatever the clean-up left of its share, is for giving the
// run lease back, which takes a round trip. Redis commands give up after
// commandTimeout (see Dial), so even a frozen server holds no step longer
// than that.
var stopBudget = harness.CleanupTimeout

// Run runs every strategy of cfg, one after another, each on freshly set up
// wallets, and returns the report. In a contention sweep (cfg.Sweep) it
// runs them all at the first worker count, then all at the next: one row
// per strategy and count. Without the service a strategy needs in env it
// fails before anything runs.
//
// Run first takes a lease on cfg.Prefix (harness.TakeLease) and marks the
// PostgreSQL rows it uses as the prefix's (ledger.Open): a second run on
// the same prefix, or on ids that another run holds, is refused with an
// error saying so, before anything is written.
//
// When ctx ends (Ctrl-C), the strategy running stops: waits for a lock end
// at once, spends already holding their wallet get a moment to finish (see
// call), and Run returns the figures of the strategies run so far, the last
// one marked Interrupted, with a nil error (and no row at all when ctx
// ended before the first strategy started). The keys and rows it wrote are
// deleted whatever happens; what it could not delete is in
// Report.Leftovers. All of this takes about harness.CleanupTimeout after ctx
// ends, even when a service no longer answers.
//
// An error from Redis or PostgreSQL while setting up or reading back the
// wallets ends the run: Run then returns that error, and the report of what
// was measured before it.
func Run(ctx context.Context, env *Env, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	_, needPostgres := cfg.needs()
	if env == nil || env.Redis == nil || (needPostgres && env.Postgres == nil) ||
		(slices.Contains(cfg.Strategies, Redlock) && env.Redlock == nil) {
		return nil, errors.New("loadtest: Run needs Redis, PostgreSQL when a strategy uses it, and the Redlock nodes for redlock (see Dial)")
	}
	if cfg.maxWorkers() >= manyWorkers {
		defer collectSooner()()
	}
	started := time.Now()
	rep := newReport(cfg, env, started)
	// The spends end a moment after ctx (see stopBudget), never before.
	spends, stop := lingering(context.WithoutCancel(ctx), ctx, stopBudget/3)
	defer stop()
	stopped, stopWatching := stopClock(ctx)
	defer stopWatching()

	lease, err := harness.TakeLease(ctx, env.Redis, cfg.Prefix)
	if err != nil && ctx.Err() == nil {
		return nil, err // runlease's message names the prefix and -prefix
	}
	if err == nil {
		r := newRunner(cfg, env, stopped)
		err = r.setUp(ctx, env, rep)
		if err == nil {
			err = r.phases(ctx, spends, lease, rep)
		}
		r.fair.Close() // its waiters are gone: every spend has returned
		rep.compare()
		r.bar.finish() // before any line about leftovers
		r.cleanUp(ctx, lease, env, rep)
		if rep.Leftovers != nil && err != nil && len(rep.Rows) == 0 {
			err = fmt.Errorf("%w; and %s", err, rep.Leftovers) // no report to hold them
		}
	}
	rep.Interrupted = ctx.Err() != nil
	if rep.Interrupted {
		// Cut short while setting up or reading back: not a failure.
		err = nil
		if len(rep.Rows) == 0 {
			rep.NotRun = nil
			for _, p := range cfg.plan() {
				rep.NotRun = append(rep.NotRun, p.label(cfg))
			}
		}
	}
	rep.Seconds = time.Since(started).Seconds()
	rep.PeakRSSBytes = peakRSS()
	if err != nil && len(rep.Rows) == 0 {
		return nil, err // it failed before anything was measured
	}
	return rep, err
}

// runGCPercent is the GOGC of a run of manyWorkers or more, unless GOGC
// is set. Go lets the heap grow by its live size plus the goroutine
// stacks before it collects, and at 10,000 workers the stacks are 100 MiB
// and more, the live heap a few tens.
const runGCPercent = 25

// runMemoryLimit is the soft memory limit of a run of manyWorkers or
// more, unless GOMEMLIMIT is set (debug.SetMemoryLimit). GOGC alone
// bounds the heap, not what the process holds: at 10,000 workers and
// 100,000 wallets the heap peaked near 130 MiB and the stacks in use near
// 50 MiB, yet the peak RSS reached 281 to 331 MiB, stacks allocated
// beyond their use and memory freed but not yet given back (issue 35).
// The limit leaves out the program's own code, some 30 MiB of RSS: 192
// MiB kept the peak at 222 to 231 MiB (224 MiB let it reach 267).
const runMemoryLimit = 192 << 20

// manyWorkers is where the stacks outweigh the live heap and runGCPercent
// and runMemoryLimit apply.
const manyWorkers = 1000

var gcRuns struct {
	sync.Mutex
	n, prevPercent int
	prevLimit      int64
}

// collectSooner sets runGCPercent and runMemoryLimit until the last of
// the runs under way calls the function it returns.
func collectSooner() func() {
	gcRuns.Lock()
	defer gcRuns.Unlock()
	if gcRuns.n++; gcRuns.n == 1 {
		gcRuns.prevPercent, gcRuns.prevLimit = -2, -1
		if os.Getenv("GOGC") == "" {
			gcRuns.prevPercent = debug.SetGCPercent(runGCPercent)
		}
		if os.Getenv("GOMEMLIMIT") == "" {
			gcRuns.prevLimit = debug.SetMemoryLimit(runMemoryLimit)
		}
	}
	return func() {
		gcRuns.Lock()
		defer gcRuns.Unlock()
		if gcRuns.n--; gcRuns.n == 0 {
			if gcRuns.prevPercent != -2 {
				debug.SetGCPercent(gcRuns.prevPercent)
			}
			if gcRuns.prevLimit != -1 {
				debug.SetMemoryLimit(gcRuns.prevLimit)
			}
		}
	}
}

// step is one phase of a run: a strategy at a number of workers.
type step struct {
	name    string
	workers int
}

// plan lists the phases of a run in the order they run.
func (c Config) plan() []step {
	var steps []step
	for _, n := range c.Levels() {
		for _, name := range c.Strategies {
			steps = append(steps, step{name, n})
		}
	}
	return steps
}

// label names a phase: the strategy, and in a sweep its workers too.
func (p step) label(c Config) string {
	if len(c.Levels()) > 1 {
		return fmt.Sprintf("%s at %d workers", p.name, p.workers)
	}
	return p.name
}

// phases runs the strategies one after another, until one fails, ctx ends
// or the lease is lost, and adds their rows to rep.
func (r *runner) phases(ctx, spends context.Context, lease *harness.Lease, rep *Report) error {
	plan := r.cfg.plan()
	notRun := func(from int) {
		for _, p := range plan[from:] {
			rep.NotRun = append(rep.NotRun, p.label(r.cfg))
		}
	}
	for i, p := range plan {
		if ctx.Err() != nil || lease.Context().Err() != nil {
			notRun(i)
			break
		}
		s, _ := strategyByName(p.name)
		r.bar.phase(i, p.label(r.cfg))
		row, err := r.phase(ctx, spends, s, p.workers, rep)
		if row != nil {
			rep.Rows = append(rep.Rows, *row)
		}
		if err != nil {
			if row == nil {
				i-- // not even set up
			}
			notRun(i + 1)
			return err
		}
	}
	if lease.Context().Err() != nil {
		return fmt.Errorf("loadtest: lost the run lease on prefix %q (%v): stopped, and left the keys and rows, which may be another run's now", r.cfg.Prefix, context.Cause(lease.Context()))
	}
	return nil
}

// lingering returns a context derived from base that ends d after ctx
// ends (with the cause errOutOfTime). Its CancelFunc ends it at once.
func lingering(base, ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	out, cancel := context.WithCancelCause(base)
	stop := context.AfterFunc(ctx, func() {
		t := time.AfterFunc(d, func() { cancel(errOutOfTime) })
		context.AfterFunc(out, func() { t.Stop() })
	})
	return out, func() {
		stop()
		cancel(context.Canceled)
	}
}

// errOutOfTime is the cause of the contexts that end a while after Ctrl-C.
var errOutOfTime = errors.New("loadtest: out of time after the interrupt")

// stopClock returns a function that says when ctx ended (the zero time
// while it has not), and one that stops watching ctx.
func stopClock(ctx context.Context) (func() time.Time, func() bool) {
	var at atomic.Int64
	stop := context.AfterFunc(ctx, func() { at.CompareAndSwap(0, time.Now().UnixNano()) })
	return func() time.Time {
		if ctx.Err() != nil {
			// AfterFunc runs a moment after the end: now is as good.
			at.CompareAndSwap(0, time.Now().UnixNano())
		}
		if n := at.Load(); n != 0 {
			return time.Unix(0, n)
		}
		return time.Time{}
	}, stop
}

// windDown returns the context of a step that follows the spends (reading
// back, cleaning up): it lasts at most limit from now, and ends by after
// ctx ends. Once ctx has ended that is a deadline, which go-redis honours
// even in a blocked read.
func (r *runner) windDown(ctx context.Context, by, limit time.Duration) (context.Context, context.CancelFunc) {
	base, cancelBase := context.WithTimeout(context.WithoutCancel(ctx), limit)
	if at := r.stopped(); !at.IsZero() {
		out, cancel := context.WithDeadline(base, at.Add(by))
		return out, func() { cancel(); cancelBase() }
	}
	out, cancel := lingering(base, ctx, by)
	return out, func() { cancel(); cancelBase() }
}

// runner carries what every spend of a run needs.
type runner struct {
	cfg     Config
	rdb     redis.UniversalClient // nil when no strategy spends through Redis
	store   *ledger.Store         // owned by the prefix; nil when no strategy uses PostgreSQL
	fair    *fair.Lock            // nil when the run has no fair strategy
	redsync *redlock.Nodes        // the one Redis, for the redsync strategy; nil without it
	redlock *redlock.Nodes        // nil when the run has no redlock strategy
	calls   *env.CallCounter      // commands sent to Redis; nil: not counted
	w       *wallets
	bar     *progress
	turns   *turns // the phase's critical sections at once (see turnsFor); nil: not limited

	stopped func() time.Time // when ctx ended; zero while it runs
	slowest time.Duration    // the longest set-up of the wallets so far
}

// newRunner readies the clients of the strategies of cfg on e, and its
// progress bar; stopped says when the run's ctx ended.
func newRunner(cfg Config, e *Env, stopped func() time.Time) *runner {
	r := &runner{cfg: cfg, calls: e.calls, stopped: stopped, bar: startProgress(cfg),
		w: &wallets{prefix: cfg.Prefix, first: cfg.FirstID, n: cfg.Wallets, rdb: e.Redis}}
	if needRedis, _ := cfg.needs(); needRedis {
		r.rdb = e.Redis
	}
	if slices.Contains(cfg.Strategies, "fair") {
		// One for the whole run: its waiters share one subscription.
		r.fair = fair.NewReadingOn(e.Redis, e.FairReads)
	}
	if slices.Contains(cfg.Strategies, "redsync") {
		r.redsync = redlock.NewNodes([]string{strings.Join(env.OptionsOf(e.Redis).Addrs, ",")}, e.Redis)
	}
	if slices.Contains(cfg.Strategies, Redlock) {
		r.redlock = e.Redlock
	}
	return r
}

// settle is settleTimeout, or twice the slowest set-up.
func (r *runner) settle() time.Duration { return max(settleTimeout, 2*r.slowest) }

// setUp times the work and the round trips to the services the run uses,
// deletes what an interrupted earlier run left on the Redlock nodes, makes
// sure the wallet table exists and sets up the run's PostgreSQL wallets
// once, which marks them as the prefix's: ids that another run holds are
// refused here, before any strategy runs.
func (r *runner) setUp(ctx context.Context, e *Env, rep *Report) (err error) {
	if rep.WorkTime, err = measureWork(ctx, r.cfg.Work); err != nil {
		return err
	}
	if r.rdb != nil {
		rep.RedisRTT, err = measureRTT(ctx, pings, func(ctx context.Context) error { return r.rdb.Ping(ctx).Err() })
		if err != nil {
			return fmt.Errorf("loadtest: time Redis round trips: %w", err)
		}
	}
	_, needPostgres := r.cfg.needs()
	if needPostgres {
		rep.PostgresRTT, err = measureRTT(ctx, pings, func(ctx context.Context) error { return e.Postgres.Ping(ctx) })
		if err != nil {
			return fmt.Errorf("loadtest: time PostgreSQL round trips: %w", err)
		}
	}
	if err := r.clearRedlock(ctx); err != nil || !needPostgres {
		return err
	}
	if r.store, err = ledger.Open(ctx, e.Postgres, r.cfg.Prefix); err != nil {
		return err
	}
	r.w.store = r.store
	defer r.timeSetup(time.Now())
	return r.w.reset(ctx, true, r.cfg.Initial, r.bar.setup)
}

func (r *runner) timeSetup(start time.Time) { r.slowest = max(r.slowest, time.Since(start)) }

// cleanUp deletes what the run wrote and gives the lease back, and records
// in rep what is left.
func (r *runner) cleanUp(ctx context.Context, lease *harness.Lease, env *Env, rep *Report) {
	clean, cancel := r.windDown(ctx, 5*stopBudget/6, r.settle())
	defer cancel()
	if lease.Context().Err() != nil {
		// Another run may hold the prefix by now: deleting by it could
		// take that run's keys and rows.
		rep.Leftovers = leftovers(env, r.cfg.Prefix, r.w.touched > 0, r.store != nil,
			fmt.Errorf("the run lease was lost: %w", context.Cause(lease.Context())))
	} else {
		if redisLeft, pgLeft, err := r.w.cleanup(clean); err != nil {
			rep.Leftovers = leftovers(env, r.cfg.Prefix, redisLeft, pgLeft, err)
		}
		// Every key on the Redlock nodes expires within the TTL: one
		// this misses is not left behind for long.
		_ = r.clearRedlock(clean)
	}
	// The rest of stopBudget, on a context of its own: a clean-up that ran
	// out of time must not keep the next run out too.
	leaseCtx, cancelLease := r.windDown(ctx, stopBudget, r.settle())
	defer cancelLease()
	_ = lease.Close(leaseCtx)
}

// tally collects what the workers of one phase measure.
type tally struct {
	mu                                                     sync.Mutex
	latency, wait, pool                                    *hdrhistogram.Histogram
	spends, attempts, funds, stale, errs, unknown, dropped int64
	firstErr, firstUnknown                                 error
	accepted, unknownAt                                    []int64           // per wallet
	rec                                                    *history.Recorder // every spend; nil: not recorded
	amount                                                 int64

	// The time of the spends, and what of it went to waiting for a
	// connection (of which for a PostgreSQL one) and for the lock.
	took, pooled, pooledPG, locked time.Duration
}

func newTally(wallets int) *tally {
	return &tally{latency: newHistogram(), wait: newHistogram(), pool: newHistogram(),
		accepted: make([]int64, wallets), unknownAt: make([]int64, wallets)}
}

func (t *tally) add(i int, o outcome, took time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if o.abandoned {
		t.dropped++
		return
	}
	t.spends++
	t.attempts += int64(o.attempts)
	record(t.latency, took)
	if o.waited > 0 { // only strategies that took a lock set it
		record(t.wait, o.waited)
	}
	record(t.pool, o.pooled)
	t.took += took
	t.pooled += o.pooled
	t.pooledPG += o.pooledPG
	t.locked += o.waited
	switch {
	case o.ok:
		t.accepted[i]++
	case errors.Is(o.err, wallet.ErrUnknownOutcome):
		// The write was sent and no reply came: it may have landed. The
		// verdict allows for it; it is not a failure.
		t.unknownAt[i]++
		t.unknown++
		if t.firstUnknown == nil {
			t.firstUnknown = o.err
		}
		return
	case errors.Is(o.err, ledger.ErrStaleFence):
		t.stale++
		return
	case o.err == nil:
		t.funds++
	}
	if o.err != nil {
		t.errs++
		if t.firstErr == nil {
			t.firstErr = o.err
		}
	}
}

// phase runs one strategy with workers spenders for cfg.Duration (or
// cfg.Ops spends) on fresh wallets and measures it. It returns no row when
// the wallets could not be set up, and a row with a Note but no Check when
// the balances could not be read back after the spends.
func (r *runner) phase(ctx, spends context.Context, s strategy, workers int, rep *Report) (*Row, error) {
	cfg := r.cfg
	row := &Row{Strategy: s.name, Workers: workers, RoundTrips: s.trips}
	before, err := r.freshWallets(ctx, s, row)
	if err != nil {
		return nil, err
	}
	r.bar.spending()
	if s.trips.Redis > 0 {
		// Lock and fence keys, wherever the balances are: cleanup deletes
		// them on the wallets spent from (wallets.spentOn).
		r.w.touched = cfg.Wallets
		r.w.lockKeysFrom()
	}
	sentBefore := r.calls.Sent()

	r.turns = r.turnsFor(s)
	t := newTally(cfg.Wallets)
	r.startHistory(t) // every wallet holds cfg.Initial from here on
	// The phase ends by a cancel, not a deadline: a lock wait derives from
	// run (spendOnce), and go-redis turns a context's deadline into the
	// connection's, so a command in flight at the end would fail with an
	// i/o timeout a moment before run.Err() says the phase is over, and
	// count as an error instead of an abandoned wait.
	run, stop := context.WithCancel(ctx)
	defer stop()
	defer time.AfterFunc(cfg.Duration, stop).Stop()
	var issued atomic.Int64
	var wg sync.WaitGroup
	probe := probeWork(run, cfg.Work)
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			// Each worker draws its wallets from its own stream, so a
			// -seed gives every worker the same sequence on every run.
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			for run.Err() == nil {
				// Past -ops this worker stops, and the spends the others
				// have started run to their end: ending run here would cut
				// their lock waits short, and the row would count fewer.
				if cfg.Ops > 0 && issued.Add(1) > cfg.Ops {
					return
				}
				i := 0
				if !cfg.Hot {
					i = rng.IntN(cfg.Wallets)
				}
				if s.trips.Redis > 0 {
					r.w.spentOn(i) // before: a spend cut short may leave its lock
				}
				o, start, took := r.spendOnce(run, spends, s, r.w.id(i))
				t.add(i, o, took)
				t.record(r.w.id(i), w, o, start, took)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	row.WorkUnderLoad = probe()
	// The workers' stacks (80 MiB at 10,000) are freed by the next
	// collection, whose goal counts them too: collect now, before the
	// read-back and the next set-up allocate, so that peak memory is the
	// largest phase's, not the sum.
	if ctx.Err() == nil {
		runtime.GC()
	}
	sent := r.calls.Sent() - sentBefore
	if sentBefore < 0 {
		sent = -1
	}
	row.Interrupted = ctx.Err() != nil
	r.count(row, t, elapsed, rep)

	return row, r.judge(ctx, s, row, t, before, sent, rep)
}

// freshWallets sets up the wallets of a phase of s, and returns Redis's
// command counts once they are (nil without Redis). Both may be done
// again: a cluster that fails over between two phases delays the next
// one, it does not end the run.
func (r *runner) freshWallets(ctx context.Context, s strategy, row *Row) (env.CommandStats, error) {
	start := time.Now()
	err := r.again(ctx, func(ctx context.Context) error { return r.w.reset(ctx, s.inPostgres, r.cfg.Initial, r.bar.setup) })
	r.timeSetup(start)
	row.SetupSeconds = time.Since(start).Seconds()
	if err != nil || r.rdb == nil {
		return nil, err
	}
	var before env.CommandStats
	err = r.again(ctx, func(ctx context.Context) (err error) {
		before, err = r.commandStats(ctx, s)
		return err
	})
	return before, err
}

// judge reads the balances back after the spends, on a clock that starts
// now, however long the phase took; checks them (ledger.Judge) and the
// history of the spends (see history.go); and counts the Redis commands
// the spends cost: as Redis counts them since before (nil: not known),
// and the sent ones this run sent (-1: not known).
func (r *runner) judge(ctx context.Context, s strategy, row *Row, t *tally, before env.CommandStats, sent int64, rep *Report) error {
	var bal []int64
	var err error
	if row.Interrupted && r.cfg.Wallets > readBackAfterStop {
		// What is left of stopBudget goes to deleting the wallets: a
		// read-back as long would leave them behind.
		row.Note = fmt.Sprintf("balances not read back after Ctrl-C: at more than %d wallets the time left goes to deleting them", readBackAfterStop)
	} else {
		after, cancel := r.windDown(ctx, stopBudget/2, r.settle())
		defer cancel()
		err = retry(after, func() (err error) {
			bal, err = r.w.balances(after, s.inPostgres)
			return err
		})
		if err != nil {
			row.Note = "balances not read back: " + err.Error()
		} else if r.rdb != nil {
			if now, err := r.commandStats(after, s); err == nil && before != nil {
				if n := now.Since(before); n >= 0 {
					row.RedisCommands, row.RedisPerSpend = perSpend(n, row.Accepted)
				}
			}
			if sent >= 0 {
				row.RedisCalls, row.RedisCallsPerSpend = perSpend(sent, row.Accepted)
			}
		}
	}
	if t.rec != nil {
		// The history ends with the balances read back, if they were.
		for i, b := range bal {
			t.rec.Read(r.w.id(i), b)
		}
		v := t.rec.Check(ctx, historyLimits)
		row.Linearizable, row.LinearizableWhy = string(v.Linearizable), v.Why
		row.HistoryOps, row.HistoryDropped, row.HistoryCheckSeconds = v.Ops, v.Dropped, v.Seconds
		if r.cfg.History == HistoryPage {
			rep.histories = append(rep.histories, history.Section{Label: rep.label(*row), History: t.rec, Verdict: v})
		}
	}
	if bal == nil {
		return err
	}
	v, landed, off, money := ledger.Judge(r.cfg.Initial, r.cfg.Amount, t.accepted, t.unknownAt, bal)
	row.Sum, row.Check, row.OK, row.WalletsOff, row.MoneyOff = v, v.String(), v.OK, off, money
	row.UnknownLanded = int64(landed)
	row.Measured, row.Note = measured(row)
	return nil
}

// readBackAfterStop is the most wallets an interrupted phase reads back:
// beyond it, reading them back and deleting them would not both fit in
// stopBudget on a busy machine (issue 35: 100,000 wallets left 66,618 to
// 100,001 keys behind).
const readBackAfterStop = 10_000

// perSpend returns n, and n per accepted spend (nil when none was).
func perSpend(n, accepted int64) (*int64, *float64) {
	if accepted == 0 {
		return &n, nil
	}
	per := float64(n) / float64(accepted)
	return &n, &per
}

// count fills in the figures of a phase that need no read-back.
func (r *runner) count(row *Row, t *tally, elapsed time.Duration, rep *Report) {
	s, _ := strategyByName(row.Strategy)
	row.Seconds = elapsed.Seconds()
	row.Spends, row.Attempts = t.spends, t.attempts
	for _, n := range t.accepted {
		row.Accepted += n
	}
	row.RefusedFunds, row.RefusedStale, row.Errors, row.Unknown, row.Abandoned = t.funds, t.stale, t.errs, t.unknown, t.dropped
	if t.firstErr != nil {
		row.FirstError = t.firstErr.Error()
	}
	if t.firstUnknown != nil {
		row.FirstUnknown = t.firstUnknown.Error()
	}
	if elapsed > 0 {
		row.PerSecond = float64(row.Accepted) / elapsed.Seconds()
	}
	row.Latency = latencyOf(t.latency)
	if s.locks {
		l := latencyOf(t.wait)
		row.LockWait = &l
	}
	row.PoolWait = latencyOf(t.pool)
	if t.took > 0 {
		row.PoolWaitShare = float64(t.pooled) / float64(t.took)
		row.LockWaitShare = float64(t.locked) / float64(t.took)
	}
	if row.PoolWaitShare >= poolLimitShare && row.PoolWaitShare > row.LockWaitShare {
		row.PoolLimit = "redis"
		if 2*t.pooledPG > t.pooled {
			row.PoolLimit = "postgres"
		}
	}
	work := r.cfg.Work
	if rep.WorkTime != nil {
		work = rep.WorkTime.duration()
	}
	if s.workOutside {
		work = 0
	}
	parallel := Parallel(r.cfg.Wallets, row.Workers, r.cfg.Hot)
	row.Ceiling = Ceiling(parallel, work, row.RoundTrips, rep.RedisRTT.duration(), rep.PostgresRTT.duration())
	row.Efficiency = Efficiency(row.PerSecond, row.Ceiling)
	if row.WorkUnderLoad > 0 && !s.workOutside {
		loaded := time.Duration(row.WorkUnderLoad * float64(time.Millisecond))
		row.CeilingUnderLoad = Ceiling(parallel, loaded, row.RoundTrips, rep.RedisRTT.duration(), rep.PostgresRTT.duration())
		row.EfficiencyUnderLoad = Efficiency(row.PerSecond, row.CeilingUnderLoad)
	}
	switch {
	case row.Ceiling <= 0: // no ceiling at all (atomic): nothing to set aside
	case row.PoolLimit != "":
		row.CeilingNotApplicable = "pool"
	case Sparse(r.cfg.Wallets, row.Workers, r.cfg.Hot):
		row.CeilingNotApplicable = "spread"
	}
	if row.Ceiling > 0 {
		// A fair queue of c contenders serves each of them within c
		// critical sections; one section is parallel/ceiling.
		section := float64(parallel) / row.Ceiling * 1000
		row.FIFOBound = float64(Contenders(r.cfg.Wallets, row.Workers, r.cfg.Hot)) * section
	}
}

// poolLimitShare is the share of its time a row may spend waiting for a
// connection before the pool, not the strategy, is what it measures
// (when the lock wait is less). (A default run's PostgreSQL rows wait
// about a fifth of their time: 64 workers on 50 connections.)
const poolLimitShare = 1.0 / 3

// Sparse reports whether the workers are so spread over the wallets (one
// for ten wallets, or fewer) that two seldom want one wallet at once: no
// queue forms, and neither the serial ceiling nor the fair-queue bound is
// what limits the rate or the wait.
func Sparse(wallets, workers int, hot bool) bool {
	return !hot && wallets > 1 && workers*10 <= wallets
}

// Contenders is how many workers want one wallet at a time: all of them
// on a hot wallet, otherwise the workers per wallet rounded up. Spread
// wallets are picked at random, so some queues are longer at times: there
// the fair-queue bound built from it is a yardstick, not a promise.
func Contenders(wallets, workers int, hot bool) int {
	if hot || wallets <= 1 {
		return max(workers, 0)
	}
	return max((workers+wallets-1)/wallets, 1)
}

// maxFailedShare is the share of a phase's spends that may end in an error
// or an unknown outcome before its figures stop meaning anything: the rate
// and the latencies would then describe the failures.
const maxFailedShare = 0.05

// measured says whether a judged row measured the strategy, and if not,
// why: it accepted nothing, or too many of its spends failed.
func measured(row *Row) (bool, string) {
	failed := row.Errors + row.Unknown
	switch {
	case row.Accepted == 0:
		return false, "no spend accepted"
	case float64(failed) > maxFailedShare*float64(row.Spends):
		return false, fmt.Sprintf("%.0f%% of the spends failed or got no reply (more than %.0f%%)",
			100*float64(failed)/float64(row.Spends), 100*maxFailedShare)
	}
	return true, ""
}

// retry calls f until it succeeds, fails with an answer from the server,
// or ctx ends: reading back balances or deleting keys may be done again,
// and a service that stalls for a while must not cost the run.
func retry(ctx context.Context, f func() error) error {
	for {
		err := f()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// again calls f as retry does, for at most r.settle(): for what comes
// before the spends of a phase, which may be done again.
func (r *runner) again(ctx context.Context, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, r.settle())
	defer cancel()
	return retry(ctx, func() error { return f(ctx) })
}

// spendOnce makes one spend of wallet id and times it, waiting included.
// The wait for a lock, and for a turn at the pool before it (see turns),
// ends with run; the spend itself with -timeout, or a moment after Ctrl-C
// (see stopBudget), which spends does. Both contexts carry a poolClock, which times what the
// spend's calls wait for a connection; its pool wait is that and its turn.
func (r *runner) spendOnce(run, spends context.Context, s strategy, id int64) (outcome, time.Time, time.Duration) {
	clock := &poolClock{}
	start := time.Now()
	spendCtx, cancel := context.WithDeadline(withPoolClock(spends, clock), start.Add(r.cfg.Timeout))
	defer cancel()
	spendCtx, read := r.seeReads(spendCtx)
	c := call{ctx: spendCtx, wait: spendCtx, id: id, pool: clock}
	if s.locks {
		// run ends before spends does, never after: ending with either,
		// the wait ends within the spend. No goroutine waits for the end
		// of run, as context.AfterFunc would start one per worker then.
		wait, cancelWait := context.WithDeadlineCause(withPoolClock(run, clock), start.Add(r.cfg.Timeout), errSpendTimeout)
		defer cancelWait()
		c.wait = wait
	}
	o, turn := r.inTurn(s, c)
	took := time.Since(start)
	o.read = history.NoRead
	if read != nil {
		o.read = read.Load()
	}
	// A watchdog's refresh may wait beside the spend's own call.
	o.pooled = min(clock.total()+turn, took)
	pg := time.Duration(clock.postgres.Load())
	if r.turns != nil && r.turns.postgres {
		pg += turn
	}
	o.pooledPG = min(pg, o.pooled)
	return o, start, took
}

// turnsFor returns the turns of a phase of s (see turns): one per
// connection of the pool its critical section uses, the smaller one when
// it uses both; nil for a strategy that takes no lease.
func (r *runner) turnsFor(s strategy) *turns {
	if !s.locks {
		return nil
	}
	if pg := r.cfg.PostgresPool(); s.inPostgres && pg < r.cfg.RedisPool() {
		return &turns{free: make(chan struct{}, pg), postgres: true}
	}
	return &turns{free: make(chan struct{}, r.cfg.RedisPool())}
}

// inTurn makes the spend once r.turns admits it, and returns how long it
// waited for its turn. The wait ends as a lock wait does (c.wait): at the
// end of the phase the spend is abandoned, at -timeout it failed.
func (r *runner) inTurn(s strategy, c call) (outcome, time.Duration) {
	if r.turns == nil {
		return s.spend(r, c), 0
	}
	start := time.Now()
	select {
	case r.turns.free <- struct{}{}:
	case <-c.wait.Done():
		return waitFailed(c, fmt.Errorf("loadtest: wait for a turn at the pool: %w", context.Cause(c.wait))), time.Since(start)
	}
	defer func() { <-r.turns.free }()
	turn := time.Since(start)
	return s.spend(r, c), turn
}

// errSpendTimeout ends a lock wait that reached -timeout: a failure, not
// the end of the phase.
var errSpendTimeout = errors.New("loadtest: the spend reached -timeout")

func latencyOf(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		P50: ms(h.ValueAtQuantile(50)),
		P99: ms(h.ValueAtQuantile(99)),
		Max: ms(h.Max()),
		N:   h.TotalCount(),
	}
}

func newReport(cfg Config, env *Env, started time.Time) *Report {
	rep := &Report{
		Started: started.UTC().Format(time.RFC3339),
		Params: Params{
			Strategies: cfg.Strategies,
			Wallets:    cfg.Wallets,
			Workers:    cfg.maxWorkers(),
			Sweep:      cfg.Levels(),
			Duration:   cfg.Duration.String(),
			Ops:        cfg.Ops,
			Work:       cfg.Work.String(),
			Amount:     cfg.Amount,
			Initial:    cfg.Initial,
			Seed:       cfg.Seed,
			Hot:        cfg.Hot,
			TTL:        cfg.TTL.String(),
			Timeout:    cfg.Timeout.String(),
			Prefix:     cfg.Prefix,
			FirstID:    cfg.FirstID,
		},
		System: System{
			Go:   runtime.Version(),
			OS:   runtime.GOOS + "/" + runtime.GOARCH,
			CPUs: runtime.NumCPU(),
		},
		Parallel: Parallel(cfg.Wallets, cfg.maxWorkers(), cfg.Hot),
		Rows:     []Row{},
	}
	rep.Pools.Redis, rep.Pools.FairReaders = env.redisPool, env.fairPool
	if env.Postgres != nil {
		rep.Pools.Postgres = int(env.Postgres.Config().MaxConns)
	}
	needRedis, needPostgres := cfg.needs()
	if needRedis {
		rep.System.Redis = env.redisVersion
	}
	if needPostgres {
		rep.System.Postgres = env.postgresVersion
	}
	rep.Pools.Note = fmt.Sprintf("sized to the %d workers, at most %d for Redis and %d for PostgreSQL", cfg.maxWorkers(), MaxRedisConns, MaxPostgresConns)
	if cfg.Pool > 0 {
		rep.Pools.Note = fmt.Sprintf("set by -pool to %d, at most %d for PostgreSQL", cfg.Pool, MaxPostgresConns)
	}
	return rep
}
