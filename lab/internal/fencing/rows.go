package fencing

// A row program (step 5) keeps its wallet in a PostgreSQL row guarded by
// a Redis lock. Beside the harness's phase loop it gets the two services,
// the run lease on its prefix, a fresh row for each phase (Run.Fresh), the
// check of the balance (Run.Outcome), and the end: the clean-up of the row
// and the keys, within harness.CleanupTimeout after Ctrl-C even when a
// service is frozen.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/postgres"
)

// Run is one run of a row program's phases: the harness's run (Redis, the
// report, the history), and the row.
type Run struct {
	*harness.Run
	Store   *postgres.Store // owned by the prefix: it resets and deletes only this run's row
	ID      int64           // the wallet row
	LockKey string          // the row's lock key; its fence counter is lock.FenceKey(LockKey)

	step          string
	pool          *pgxpool.Pool
	lease, phases redis.UniversalClient // the run lease's (nil when no phase needs Redis and none answers), and the phases'
	pgStuck       bool                  // PostgreSQL did not answer the clean-up in time
}

// Phase is one phase of a row program, named as in lesson.Phases.
type Phase struct {
	Name    string
	Run     func(ctx context.Context, r *Run) (harness.Outcome, error)
	NoRedis bool // a phase that needs no Redis (step 5's phase 4)
}

// Row is what a row program asks of Rows beside its phases.
type Row struct {
	NeedRedis bool          // false when no phase that runs needs Redis
	TTL       time.Duration // the lease's, for the versions line
	Limit     time.Duration // how long a phase may run before it is stopped as hung
	Spenders  int           // -n, for the lesson's "50 " in a phase's title
}

// Rows runs the phases of a row program on the wallet -wallet-id names.
// It connects to PostgreSQL, then to Redis, and takes the run lease on
// the prefix, so that a second run on it is refused instead of resetting
// this one's row and keys. The row is the prefix's too (postgres.Store.Owned):
// a run on another prefix that asks for the same id is refused with a
// *wallet.OwnedError. Without NeedRedis it takes the lease if Redis
// answers and runs without one if not. It prints the versions, and sets
// them in the report before report adds the program's own keys; then the
// harness's phase loop runs each phase, bounded by Limit: a phase that
// runs far past what its flags ask for has gone wrong and must not hang.
// At the end it deletes the row and the keys. It returns the exit code.
//
// The phases get a Redis client of their own, closed as soon as the work
// ends: go-redis gives up a read when its deadline passes, not when its
// context is cancelled, so a phase stuck on a frozen Redis would otherwise
// eat the clean-up time that the row in PostgreSQL needs.
func Rows(ctx context.Context, p *harness.Program, o Row, settings map[string]any, phases []Phase) int {
	id := p.WalletID()
	r := &Run{Run: p.NewRun(ctx, o.Spenders), ID: id, LockKey: wallet.LockKey(p.Prefix(), id), step: p.Step}
	r.OneRow = true
	header, err := r.open(ctx, o)
	if err != nil {
		r.close()
		return p.Fail(err)
	}
	r.Report.SetEach(settings)
	if !p.JSON() {
		fmt.Fprintln(p.Stdout, header)
	}
	loop := make([]harness.Phase, len(phases))
	for i, ph := range phases {
		loop[i] = harness.Phase{Name: ph.Name, Run: func(ctx context.Context, _ *harness.Run) (harness.Outcome, error) { return ph.Run(ctx, r) }}
	}
	return p.Loop(r.Run, loop, o.Limit, func() { r.cleanup(p.Stderr) })
}

// open connects to the services and takes the run lease; it returns the
// versions line.
func (r *Run) open(ctx context.Context, o Row) (string, error) {
	// PostgreSQL first: every phase needs it, and a bad DATABASE_URL must
	// be reported before anything runs.
	pool, err := postgres.Connect(ctx)
	if err != nil {
		return "", err
	}
	r.pool = pool
	store, err := postgres.OpenStore(ctx, pool)
	if err != nil {
		return "", err
	}
	r.Store = store.Owned(r.Prefix)
	pg, err := postgres.Version(ctx, pool)
	if err != nil {
		return "", err
	}
	header := "PostgreSQL " + pg + ", no Redis"
	r.lease, err = services.Connect(ctx)
	switch {
	case err != nil && o.NeedRedis:
		return "", err
	case err != nil: // runs without Redis
	case o.NeedRedis:
		if r.phases, err = services.Connect(ctx); err != nil {
			return "", err
		}
		version, err := services.RedisVersion(ctx, r.phases)
		if err != nil {
			return "", err
		}
		r.Redis, header = r.phases, fmt.Sprintf("Redis %s, PostgreSQL %s; lease TTL %v", version, pg, o.TTL)
		r.Report.Set("redis_version", version)
	}
	if r.lease != nil {
		if err := r.TakeLease(ctx, r.lease); err != nil {
			return "", err
		}
	}
	if r.phases != nil {
		context.AfterFunc(r.Context(), func() { r.phases.Close() })
	}
	r.Report.Set("postgres_version", pg)
	return header, nil
}

// Fresh puts the wallet back to balance with fence 0, and forgets the lease
// and the fence counter, so that a phase's fences start at 1. It starts
// the phase's history (Record).
func (r *Run) Fresh(ctx context.Context, balance int64) error {
	if r.Redis != nil {
		if err := r.Redis.Del(ctx, r.LockKey, lock.FenceKey(r.LockKey)).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	err := r.Store.Reset(ctx, r.ID, balance)
	r.Record(r.ID, balance) // the phase's history starts here (Run.Spend)
	return err
}

// Outcome reads the row's balance and checks it against the accepted
// spends and those whose outcome is unknown (wallet.CheckUnknown), adding
// a line that says how many of the unknown ones landed.
func (r *Run) Outcome(ctx context.Context, start, amount int64, accepted, unknown int, figures any, lines ...string) (harness.Outcome, error) {
	bal, err := r.Store.Balance(ctx, r.ID)
	if err != nil {
		return harness.Outcome{}, err
	}
	v := wallet.CheckUnknown(start, amount, accepted, unknown, bal)
	if unknown > 0 && v.Landed >= 0 {
		lines = append(lines, fmt.Sprintf("spends with an unknown outcome (sent, no reply): %d, of which the balance says %d landed", unknown, v.Landed))
	}
	return harness.Outcome{Verdict: v, Lines: lines, Figures: figures}, nil
}

// cleanup deletes the wallet row, then the keys, gives the prefix back and
// closes the services, all within the clean-up time (CleanupTimeout after
// Ctrl-C). The row gets at most half of it, so that a frozen PostgreSQL
// leaves the other half to Redis; a PostgreSQL that is restarting gets
// that half to come back. What could not be deleted is named on stderr,
// one line per service, with the command that deletes it.
func (r *Run) cleanup(stderr io.Writer) {
	defer r.close()
	ctx, cancel := r.Cleanup()
	defer cancel()
	deadline, _ := ctx.Deadline()
	rctx, rcancel := context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
	defer rcancel()
	if err := again(rctx, func(ctx context.Context) error { return r.Store.Delete(ctx, r.ID) }); err != nil {
		why := harness.OneLine(err)
		if rctx.Err() != nil {
			why = "PostgreSQL did not answer in time"
			r.pgStuck = true
		}
		fmt.Fprintf(stderr, "%s: could not delete wallet %d in PostgreSQL (%s); it may still be there, delete it with: %s\n",
			r.step, r.ID, why, harness.PostgresDelete(r.Prefix, r.ID))
	}
	if r.Redis == nil {
		r.GiveBack(stderr)
	} else {
		r.GiveBack(stderr, r.LockKey, lock.FenceKey(r.LockKey))
	}
}

func (r *Run) close() {
	for _, rdb := range []redis.UniversalClient{r.phases, r.lease} {
		if rdb != nil {
			rdb.Close()
		}
	}
	switch {
	case r.pool == nil:
	case r.pgStuck:
		// pgx sends a cancel request for each call that Ctrl-C cut short,
		// and waits up to 15 s for an answer that a frozen PostgreSQL never
		// gives; Close would wait for those. The run is over: let them end
		// on their own.
		go r.pool.Close()
	default:
		r.pool.Close()
	}
}

// again calls f until it succeeds or ctx ends: a service that is
// restarting gets the whole time to come back.
func again(ctx context.Context, f func(ctx context.Context) error) error {
	for {
		err := f(ctx)
		if err == nil || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(100 * time.Millisecond):
		}
	}
}
