package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lesson"
	"example.com/walletlock/wallet"
)

// cleanupTimeout bounds the reading of results and the cleanup that run
// after the run's context has ended (Ctrl-C).
const cleanupTimeout = 10 * time.Second

// Run runs every strategy of cfg, one after another, each on freshly set up
// wallets, and returns the report. Without the service a strategy needs in
// env it fails before anything runs.
//
// When ctx ends (Ctrl-C), the strategy running stops: waits for a lock end
// at once, spends already holding their wallet finish (see call), and Run
// returns the figures of the strategies run so far, the last one marked
// Interrupted, with a nil error (and no row at all when ctx ended before
// the first strategy started). The keys and rows it wrote are deleted
// whatever happens.
//
// An error from Redis or PostgreSQL while setting up or reading back the
// wallets ends the run: Run then returns that error, and the report of what
// was measured before it.
func Run(ctx context.Context, env *Env, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	needRedis, needPostgres := cfg.needs()
	if env == nil || (needRedis && env.Redis == nil) || (needPostgres && env.Postgres == nil) {
		return nil, errors.New("loadtest: Run needs the Redis and PostgreSQL the strategies use (see Dial)")
	}
	started := time.Now()
	rep := newReport(cfg, env, started)
	r := &runner{cfg: cfg, rdb: env.Redis, w: wallets{prefix: cfg.Prefix, first: cfg.FirstID, n: cfg.Wallets, rdb: env.Redis}}
	if err := r.prepare(ctx, env, rep); err != nil {
		if ctx.Err() == nil {
			return nil, err
		}
		// Interrupted before the first strategy: nothing measured, no
		// failure either.
		rep.Interrupted, rep.NotRun = true, cfg.Strategies
		rep.Seconds, rep.PeakRSSBytes = time.Since(started).Seconds(), peakRSS()
		return rep, nil
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		_ = r.w.cleanup(cctx) // best effort: a failed delete must not hide the results
	}()

	bar := startProgress(cfg)
	defer bar.finish()
	var err error
	for i, name := range cfg.Strategies {
		if ctx.Err() != nil {
			rep.NotRun = append(rep.NotRun, name)
			continue
		}
		s, _ := strategyByName(name)
		bar.phase(i, name)
		var row Row
		row, err = r.phase(ctx, s, rep)
		if err != nil {
			rep.NotRun = append(rep.NotRun, cfg.Strategies[i:]...)
			if ctx.Err() != nil {
				err = nil // interrupted while setting up: not a failure
			}
			break
		}
		rep.Rows = append(rep.Rows, row)
		rep.Phases = append(rep.Phases, lesson.NewResult(Step, name, row.Check, row.OK))
	}
	rep.Interrupted = ctx.Err() != nil
	rep.Seconds = time.Since(started).Seconds()
	rep.PeakRSSBytes = peakRSS()
	return rep, err
}

// runner carries what every spend of a run needs.
type runner struct {
	cfg   Config
	rdb   *redis.Client
	store *wallet.Store
	w     wallets
}

// prepare reads the servers' versions, times their round trips and makes
// sure the wallet table exists.
func (r *runner) prepare(ctx context.Context, env *Env, rep *Report) error {
	if env.Redis != nil {
		v, err := wallet.RedisVersion(ctx, env.Redis)
		if err != nil {
			return err
		}
		rep.System.Redis = v
		rtt, err := measureRTT(ctx, pings, redisPing(env.Redis))
		if err != nil {
			return err
		}
		rep.RedisRTT = &rtt
	}
	if env.Postgres != nil {
		v, err := wallet.PostgresVersion(ctx, env.Postgres)
		if err != nil {
			return err
		}
		rep.System.Postgres = v
		if r.store, err = wallet.OpenStore(ctx, env.Postgres); err != nil {
			return err
		}
		r.w.store = r.store
		rtt, err := measureRTT(ctx, pings, postgresPing(env.Postgres))
		if err != nil {
			return err
		}
		rep.PostgresRTT = &rtt
	}
	return nil
}

// tally collects what the workers of one phase report.
type tally struct {
	mu                                            sync.Mutex
	latency, wait                                 *hdrhistogram.Histogram
	spends, attempts, funds, stale, errs, dropped int64
	firstErr                                      error
	accepted                                      []int64 // per wallet
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
	switch {
	case o.ok:
		t.accepted[i]++
	case errors.Is(o.err, wallet.ErrStaleFence):
		t.stale++
	case o.err == nil:
		t.funds++
	}
	if o.err != nil && !errors.Is(o.err, wallet.ErrStaleFence) {
		t.errs++
		if t.firstErr == nil {
			t.firstErr = o.err
		}
	}
}

// phase runs one strategy for cfg.Duration (or cfg.Ops spends) on fresh
// wallets and measures it.
func (r *runner) phase(ctx context.Context, s strategy, rep *Report) (Row, error) {
	cfg := r.cfg
	row := Row{Strategy: s.name, RoundTrips: s.trips}

	setup := time.Now()
	var err error
	if s.inPostgres {
		err = r.store.ResetRange(ctx, cfg.FirstID, cfg.Wallets, cfg.Initial)
	} else {
		err = r.w.resetRedis(ctx, cfg.Initial)
	}
	if err != nil {
		return row, err
	}
	row.SetupSeconds = time.Since(setup).Seconds()

	// Reading and judging happen after the phase, even when ctx ended.
	after, cancelAfter := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancelAfter()
	var before wallet.CommandStats
	if r.rdb != nil {
		if before, err = wallet.ReadCommandStats(ctx, r.rdb); err != nil {
			return row, err
		}
	}

	t := &tally{latency: newHistogram(), wait: newHistogram(), accepted: make([]int64, cfg.Wallets)}
	run, stop := context.WithTimeout(ctx, cfg.Duration)
	defer stop()
	var issued atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range cfg.Workers {
		wg.Go(func() {
			// Each worker draws its wallets from its own stream, so a
			// -seed gives every worker the same sequence on every run.
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			for run.Err() == nil {
				if cfg.Ops > 0 && issued.Add(1) > cfg.Ops {
					stop()
					return
				}
				i := 0
				if !cfg.Hot {
					i = rng.IntN(cfg.Wallets)
				}
				o, took := r.spendOnce(ctx, run, s, r.w.id(i))
				t.add(i, o, took)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	row.Interrupted = ctx.Err() != nil

	var bal []int64
	if s.inPostgres {
		bal, err = r.store.Balances(after, cfg.FirstID, cfg.Wallets)
	} else {
		bal, err = r.w.balancesRedis(after)
	}
	if err != nil {
		return row, err
	}
	v, off, money := judge(cfg.Initial, cfg.Amount, t.accepted, bal)
	row.Check, row.OK, row.WalletsOff, row.MoneyOff = v.String(), v.OK, off, money

	if r.rdb != nil {
		if now, err := wallet.ReadCommandStats(after, r.rdb); err == nil {
			if n := now.Since(before); n >= 0 {
				row.RedisCommands = &n
				if v.Accepted > 0 {
					per := float64(n) / float64(v.Accepted)
					row.RedisPerSpend = &per
				}
			}
		}
	}

	row.Seconds = elapsed.Seconds()
	row.Spends, row.Accepted, row.Attempts = t.spends, int64(v.Accepted), t.attempts
	row.RefusedFunds, row.RefusedStale, row.Errors, row.Abandoned = t.funds, t.stale, t.errs, t.dropped
	if t.firstErr != nil {
		row.FirstError = t.firstErr.Error()
	}
	if elapsed > 0 {
		row.PerSecond = float64(v.Accepted) / elapsed.Seconds()
	}
	row.Latency = latencyOf(t.latency)
	if s.locks {
		l := latencyOf(t.wait)
		row.LockWait = &l
	}
	row.Ceiling = Ceiling(rep.Parallel, cfg.Work, s.trips, rep.RedisRTT.duration(), rep.PostgresRTT.duration())
	row.Efficiency = Efficiency(row.PerSecond, row.Ceiling)
	return row, nil
}

// spendOnce makes one spend of wallet id and times it, waiting included.
func (r *runner) spendOnce(ctx, run context.Context, s strategy, id int64) (outcome, time.Duration) {
	spendCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Timeout)
	defer cancel()
	c := call{ctx: spendCtx, wait: spendCtx, id: id}
	if s.locks {
		wait, cancelWait := context.WithCancel(spendCtx)
		defer cancelWait()
		defer context.AfterFunc(run, cancelWait)()
		c.wait = wait
	}
	start := time.Now()
	o := s.spend(r, c)
	return o, time.Since(start)
}

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
		Step:    Step,
		Started: started.UTC().Format(time.RFC3339),
		Params: Params{
			Strategies: cfg.Strategies,
			Wallets:    cfg.Wallets,
			Workers:    cfg.Workers,
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
		Parallel: Parallel(cfg.Wallets, cfg.Workers, cfg.Hot),
		Rows:     []Row{},
		Phases:   []lesson.Result{},
	}
	if env != nil && env.Redis != nil {
		rep.Pools.Redis = env.Redis.Options().PoolSize
	}
	if env != nil && env.Postgres != nil {
		rep.Pools.Postgres = int(env.Postgres.Config().MaxConns)
	}
	rep.Pools.Note = fmt.Sprintf("sized to the %d workers, at most %d for Redis and %d for PostgreSQL", cfg.Workers, MaxRedisConns, MaxPostgresConns)
	return rep
}
