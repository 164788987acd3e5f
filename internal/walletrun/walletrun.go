// Package walletrun is what a step program needs around its phases when
// its wallet is a PostgreSQL row guarded by a Redis lock (step 5): the two
// services, the run lease on its prefix (harness.Session), a fresh row for
// each phase, the check of the balance, each phase's text, and the end:
// the clean-up of the row and the keys, within harness.CleanupTimeout after
// Ctrl-C even when a service is frozen, and the report's verdict
// (internal/harness).
//
//	w, err := walletrun.Open(ctx, walletrun.Options{...})
//	for _, p := range phases {
//		o, ok := w.Phase(name, run)
//		if !ok {
//			break
//		}
//		r.Add(name, o.Verdict, o)
//	}
//	return w.Finish()
package walletrun

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// Run is one run of a program on one wallet row. Its exported fields are
// for the phases to use; Open fills them in.
type Run struct {
	Store   *wallet.Store         // owned by the prefix: it resets and deletes only this run's row
	Redis   redis.UniversalClient // the phases' client; nil when they need no Redis
	ID      int64                 // the wallet
	LockKey string                // the wallet's lock key; its fence counter is lock.FenceKey(LockKey)

	o           Options
	parent, ctx context.Context // run's ctx (it ends at Ctrl-C), and the work's (also when the run lease is lost)
	pool        *pgxpool.Pool
	lease       redis.UniversalClient // the run lease's; nil when no phase needs Redis and none answers
	phases      redis.UniversalClient // the phases'; closed as soon as the work ends
	session     *harness.Session      // nil without Redis
	pgStuck     bool                  // PostgreSQL did not answer the clean-up in time
	cut         string                // the phase Ctrl-C cut short, if any
	failure     error                 // what stopped the run, if anything did
}

// Options say what a Run does around its phases.
type Options struct {
	Prog, Prefix   string          // the program, and the prefix of its keys, which owns its row
	ID             int64           // the wallet
	NeedRedis      bool            // false when no phase that runs needs Redis
	TTL            time.Duration   // the lease's, for the first line
	Limit          time.Duration   // how long a phase may run before it is stopped as hung
	Spenders       int             // this run's number of spenders, for the lesson's "50 " in a phase's title
	Report         *harness.Report // gets the versions, each phase's result from the caller, and the end
	JSON           bool            // print nothing but the report's JSON on stdout
	Stdout, Stderr io.Writer
}

// Outcome is what a phase found: its check, the lines of its story, and
// its figures, which -json prints under "figures".
type Outcome struct {
	Verdict wallet.Verdict `json:"-"`
	Lines   []string       `json:"-"`
	Figures any            `json:"figures"`
}

// DefaultID is the wallet a run on prefix uses when not told one: the
// article's 42 under the program's default prefix, and under any other a
// number derived from the prefix, so that runs on different prefixes use
// different rows. (Ids from 10,000 to 999,999: below step 6's default
// range, far below the tests'.)
func DefaultID(prefix, defaultPrefix string) int64 {
	if prefix == defaultPrefix {
		return wallet.DemoWallet
	}
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return 10_000 + int64(h.Sum64()%990_000)
}

// Open connects to PostgreSQL, then to Redis, and takes the run lease on
// the prefix, so that a second run on it is refused instead of resetting
// this one's row and keys. The row is the prefix's too (wallet.Store.Owned):
// a run on another prefix that asks for the same id is refused with a
// *wallet.OwnedError. Without NeedRedis it takes the lease if Redis
// answers and runs without one if not. It sets the versions in the report
// and prints them, unless JSON.
//
// The phases get a Redis client of their own, closed as soon as the work
// ends: go-redis gives up a read when its deadline passes, not when its
// context is cancelled, so a phase stuck on a frozen Redis would otherwise
// eat the clean-up time that the row in PostgreSQL needs.
func Open(ctx context.Context, o Options) (*Run, error) {
	// PostgreSQL first: every phase needs it, and a bad DATABASE_URL must
	// be reported before anything runs.
	pool, err := services.ConnectPostgres(ctx)
	if err != nil {
		return nil, err
	}
	r := &Run{ID: o.ID, LockKey: wallet.LockKey(o.Prefix, o.ID), o: o, parent: ctx, ctx: ctx, pool: pool}
	fail := func(err error) (*Run, error) { r.close(); return nil, err }
	store, err := wallet.OpenStore(ctx, pool)
	if err != nil {
		return fail(err)
	}
	r.Store = store.Owned(o.Prefix)
	pg, err := services.PostgresVersion(ctx, pool)
	if err != nil {
		return fail(err)
	}
	header := "PostgreSQL " + pg + ", no Redis"
	r.lease, err = services.Connect(ctx)
	switch {
	case err != nil && o.NeedRedis:
		return fail(err)
	case err != nil: // runs without Redis
	case o.NeedRedis:
		if r.phases, err = services.Connect(ctx); err != nil {
			return fail(err)
		}
		version, err := services.RedisVersion(ctx, r.phases)
		if err != nil {
			return fail(err)
		}
		r.Redis, header = r.phases, fmt.Sprintf("Redis %s, PostgreSQL %s; lease TTL %v", version, pg, o.TTL)
		o.Report.Set("redis_version", version)
	}
	if r.lease != nil {
		if r.session, err = harness.Start(ctx, r.lease, o.Prog, o.Prefix); err != nil {
			return fail(err)
		}
		r.ctx = r.session.Context()
	}
	if r.phases != nil {
		context.AfterFunc(r.ctx, func() { r.phases.Close() })
	}
	o.Report.Set("postgres_version", pg)
	if !o.JSON {
		fmt.Fprintln(o.Stdout, header)
	}
	return r, nil
}

// Interrupted reports whether Ctrl-C was pressed.
func (r *Run) Interrupted() bool { return r.parent.Err() != nil }

// Phase runs one phase, bounded by Limit: a phase that runs far past what
// its flags ask for has gone wrong and must not hang. After Ctrl-C it is
// waited for only until the clean-up deadline (harness.Await). It prints the
// phase's title, from the lesson, its story and its check line, unless
// JSON, and returns the outcome for the caller to add to the harness.
//
// It returns false, and runs nothing more, after Ctrl-C (the phase it cut
// short is not judged) or a failure: Finish reports either.
func (r *Run) Phase(name string, phase func(ctx context.Context) (Outcome, error)) (Outcome, bool) {
	if r.Interrupted() || r.failure != nil {
		return Outcome{}, false
	}
	type ran struct {
		o   Outcome
		err error
	}
	fn := func() ran {
		ctx, cancel := context.WithTimeout(r.ctx, r.o.Limit)
		defer cancel()
		o, err := phase(ctx)
		return ran{o, err}
	}
	got, done := ran{}, true
	if r.session != nil { // without Redis there is nothing to wait for: pgx gives up as soon as ctx ends
		got, done = harness.Await(r.session, fn)
	} else {
		got = fn()
	}
	var owned *wallet.OwnedError
	switch {
	case r.Interrupted():
		r.cut = name
		r.o.Report.Set("interrupted_during", name)
		return Outcome{}, false
	case done && got.err == nil:
	case r.ctx.Err() != nil:
		r.failure = fmt.Errorf("phase %s: %w", name, context.Cause(r.ctx)) // the run lease was lost
	case errors.As(got.err, &owned):
		r.failure = owned // the one line says it all
	default:
		r.failure = fmt.Errorf("phase %s: %w", name, got.err)
	}
	if r.failure != nil {
		return Outcome{}, false
	}
	if !r.o.JSON {
		what, _ := lesson.Lookup(r.o.Prog, name)
		fmt.Fprintf(r.o.Stdout, "\nphase %s: %s\n", name, strings.Replace(what.What, "50 ", strconv.Itoa(r.o.Spenders)+" ", 1))
		for _, line := range append(got.o.Lines, got.o.Verdict.String()) {
			fmt.Fprintln(r.o.Stdout, "  "+line)
		}
	}
	return got.o, true
}

// Finish deletes the row and the keys, says on stderr why the run
// stopped if it stopped early, and ends the report (harness.Finish): it
// returns the exit code. A run that failed before any phase ended prints
// no JSON.
func (r *Run) Finish() int {
	r.cleanup(r.o.Stderr)
	switch {
	case r.Interrupted():
		cut := " between two phases"
		if r.cut != "" {
			cut = " during phase " + r.cut + ", which is not judged"
		}
		fmt.Fprintf(r.o.Stderr, "%s: interrupted by Ctrl-C%s\n", r.o.Prog, cut)
		r.o.Report.Interrupt()
	case r.failure != nil && len(r.o.Report.Phases()) == 0:
		fmt.Fprintln(r.o.Stderr, r.o.Prog+":", OneLine(r.failure))
		return 1
	case r.failure != nil:
		r.o.Report.Fail(r.o.Stderr, errors.New(OneLine(r.failure)))
	}
	return r.o.Report.Finish(r.o.Stdout, r.o.Stderr, r.o.JSON)
}

// Fresh puts the wallet back to balance with fence 0, and forgets the lease
// and the fence counter, so that a phase's fences start at 1.
func (r *Run) Fresh(ctx context.Context, balance int64) error {
	if r.Redis != nil {
		if err := r.Redis.Del(ctx, r.LockKey, lock.FenceKey(r.LockKey)).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	return r.Store.Reset(ctx, r.ID, balance)
}

// Outcome reads the balance and checks it against the accepted spends and
// those whose outcome is unknown (wallet.CheckUnknown), adding a line that
// says how many of the unknown ones landed.
func (r *Run) Outcome(ctx context.Context, start, amount int64, accepted, unknown int, figures any, lines ...string) (Outcome, error) {
	bal, err := r.Store.Balance(ctx, r.ID)
	if err != nil {
		return Outcome{}, err
	}
	v := wallet.CheckUnknown(start, amount, accepted, unknown, bal)
	if unknown > 0 && v.Landed >= 0 {
		lines = append(lines, fmt.Sprintf("spends with an unknown outcome (sent, no reply): %d, of which the balance says %d landed", unknown, v.Landed))
	}
	return Outcome{Verdict: v, Lines: lines, Figures: figures}, nil
}

// cleanup deletes the wallet row, then the keys, gives the prefix back and
// closes the services, all within the clean-up time (harness.CleanupTimeout
// after Ctrl-C). The row gets at most half of it, so that a frozen
// PostgreSQL leaves the other half to Redis; a PostgreSQL that is
// restarting gets that half to come back. What could not be deleted is
// named on stderr, one line per service, with the command that deletes it.
func (r *Run) cleanup(stderr io.Writer) {
	defer r.close()
	var ctx context.Context
	var cancel context.CancelFunc
	if r.session != nil {
		ctx, cancel = r.session.Cleanup()
	} else {
		ctx, cancel = harness.Cleanup(r.parent)
	}
	defer cancel()
	deadline, _ := ctx.Deadline()
	rctx, rcancel := context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
	defer rcancel()
	if err := again(rctx, func(ctx context.Context) error { return r.Store.Delete(ctx, r.ID) }); err != nil {
		why := OneLine(err)
		if rctx.Err() != nil {
			why = "PostgreSQL did not answer in time"
			r.pgStuck = true
		}
		fmt.Fprintf(stderr, "%s: could not delete wallet %d in PostgreSQL (%s); it may still be there, delete it with: %s\n",
			r.o.Prog, r.ID, why, harness.PostgresDelete(r.o.Prefix, r.ID))
	}
	switch {
	case r.session == nil:
	case r.Redis == nil:
		r.session.Close(stderr)
	default:
		r.session.Close(stderr, r.LockKey, lock.FenceKey(r.LockKey))
	}
}

func (r *Run) close() {
	for _, rdb := range []redis.UniversalClient{r.phases, r.lease} {
		if rdb != nil {
			rdb.Close()
		}
	}
	if r.pgStuck {
		// pgx sends a cancel request for each call that Ctrl-C cut short,
		// and waits up to 15 s for an answer that a frozen PostgreSQL never
		// gives; Close would wait for those. The run is over: let them end
		// on their own.
		go r.pool.Close()
		return
	}
	r.pool.Close()
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

// OneLine folds an error's message onto one line: each report is one line.
func OneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
