package main

// What a run holds besides its phases: the services, the run lease on its
// prefix (cli.Session), and the clean-up of its row and keys.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

type session struct {
	parent  context.Context // the ctx of run: it ends at Ctrl-C
	ctx     context.Context // the work's: it ends at Ctrl-C, or when the run lease is lost
	pool    *pgxpool.Pool
	rdb     redis.UniversalClient // the lease's; nil when phase 4 runs alone and no Redis answers
	phases  redis.UniversalClient // the phases'; nil when phase 4 runs alone
	run     *cli.Session          // the run lease; nil without Redis
	pgStuck bool                  // PostgreSQL did not answer the clean-up in time
}

// connect opens the services, fills in their versions and takes the run
// lease on the prefix, so that a second run on it is refused instead of
// resetting this one's row and keys. The row is the prefix's too
// (wallet.Store.Owned): a run on another prefix that asks for the same
// -wallet-id is refused with a *wallet.OwnedError.
//
// The phases get a Redis client of their own, closed as soon as the work
// ends: go-redis gives up a read when its deadline passes, not when its
// context is cancelled, so a phase stuck on a frozen Redis would otherwise
// eat the clean-up time that the row in PostgreSQL needs. The session's
// client keeps the lease and deletes the keys.
//
// Phase 4 alone needs no Redis: it takes the lease if Redis answers, and
// runs without one if not. Its row is still its prefix's own.
func connect(ctx context.Context, c config, chosen []phase, out *report) (*env, *session, error) {
	// PostgreSQL first: every phase needs it, and a bad DATABASE_URL must
	// be reported before anything runs.
	pool, err := services.ConnectPostgres(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := &session{parent: ctx, ctx: ctx, pool: pool}
	e := &env{config: c}
	fail := func(err error) (*env, *session, error) { s.close(); return nil, nil, err }
	store, err := wallet.OpenStore(ctx, pool)
	if err != nil {
		return fail(err)
	}
	e.store = store.Owned(c.prefix)
	if out.Postgres, err = services.PostgresVersion(ctx, pool); err != nil {
		return fail(err)
	}
	s.rdb, err = services.Connect(ctx)
	switch {
	case err != nil && needsRedis(chosen):
		return fail(err)
	case err != nil:
		return e, s, nil // phase 4 alone, without Redis
	case needsRedis(chosen):
		if e.rdb, err = services.Connect(ctx); err != nil {
			return fail(err)
		}
		if out.Redis, err = services.RedisVersion(ctx, e.rdb); err != nil {
			return fail(err)
		}
	}
	if s.run, err = cli.Start(ctx, s.rdb, step, c.prefix); err != nil {
		return fail(err)
	}
	s.ctx = s.run.Context()
	if e.rdb != nil {
		context.AfterFunc(s.ctx, func() { e.rdb.Close() })
	}
	s.phases = e.rdb
	return e, s, nil
}

// interrupted reports whether Ctrl-C was pressed.
func (s *session) interrupted() bool { return s.parent.Err() != nil }

// await runs fn; after Ctrl-C, it waits for it only until the clean-up
// deadline (cli.Await). Without Redis there is nothing to wait for: pgx
// gives up a call as soon as its context ends.
func await[T any](s *session, fn func() T) (T, bool) {
	if s.run == nil {
		return fn(), true
	}
	return cli.Await(s.run, fn)
}

// finish deletes the wallet row, then the keys, and gives the prefix back,
// all within the clean-up time (cli.CleanupTimeout after Ctrl-C). The row
// gets at most half of it, so that a frozen PostgreSQL leaves the other
// half to Redis; a PostgreSQL that is restarting gets that half to come
// back. What could not be deleted is named on stderr, one line per
// service, with the command that deletes it.
func (s *session) finish(stderr io.Writer, e *env) {
	var ctx context.Context
	var cancel context.CancelFunc
	if s.run != nil {
		ctx, cancel = s.run.Cleanup()
	} else {
		ctx, cancel = cli.Cleanup(s.parent)
	}
	deadline, _ := ctx.Deadline()
	rctx, rcancel := context.WithDeadline(ctx, time.Now().Add(time.Until(deadline)/2))
	err := again(rctx, func(ctx context.Context) error { return e.store.Delete(ctx, e.id) })
	if err != nil {
		why := oneLine(err)
		if rctx.Err() != nil {
			why = "PostgreSQL did not answer in time"
			s.pgStuck = true
		}
		fmt.Fprintf(stderr, "%s: could not delete wallet %d in PostgreSQL (%s); it may still be there, delete it with: %s\n",
			step, e.id, why, cli.PostgresDelete(e.prefix, e.id))
	}
	rcancel()
	cancel()
	if s.run == nil {
		return
	}
	if e.rdb == nil {
		s.run.Close(stderr)
		return
	}
	s.run.Close(stderr, e.lockKey(), lock.FenceKey(e.lockKey()))
}

// close closes the services.
func (s *session) close() {
	for _, rdb := range []redis.UniversalClient{s.phases, s.rdb} {
		if rdb != nil {
			rdb.Close()
		}
	}
	if s.pgStuck {
		// pgx sends a cancel request for each call that Ctrl-C cut short,
		// and waits up to 15 s for an answer that a frozen PostgreSQL never
		// gives; Close would wait for those. The run is over: let them end
		// on their own.
		go s.pool.Close()
		return
	}
	s.pool.Close()
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

// oneLine folds an error's message onto one line: each report is one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }
