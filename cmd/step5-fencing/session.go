package main

// What a run holds besides its phases: the services, the run lease on its
// prefix, the context the phases work under, and the clean-up.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/runlease"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

type session struct {
	pool    *pgxpool.Pool
	ctl     *redis.Client   // the run lease and the clean-up; nil without Redis
	lease   *runlease.Lease // this run's hold on its prefix; nil without Redis
	work    context.Context // ends at Ctrl-C, or when the lease is lost
	stop    context.CancelCauseFunc
	unwatch func() bool // stops watching the lease
	pgStuck bool        // PostgreSQL did not answer the clean-up in time
}

var errLeaseLost = errors.New("lost the run lease")

// connect opens the services, fills in their versions and takes the run
// lease on the prefix, so that a second run on it is refused instead of
// resetting this one's row and keys. The row is the prefix's too
// (wallet.Store.Owned): a run on another prefix that asks for the same
// -wallet-id is refused with a *wallet.OwnedError.
//
// Why two Redis clients: go-redis gives up a read when its deadline
// passes, not when its context is cancelled, so a phase stuck on a frozen
// Redis would hold Ctrl-C up for seconds. Closing the phases' client (rdb)
// when the work ends cuts such calls short at once; ctl, whose calls after
// the work all have a deadline, cleans up. PostgreSQL needs no such care:
// pgx abandons a call as soon as its context ends.
//
// Phase 4 alone needs no Redis: it takes the lease if Redis answers, and
// runs without one if not. Its row is still its prefix's own.
func connect(ctx context.Context, c config, chosen []phase, out *report) (*env, *session, error) {
	// PostgreSQL first: every phase needs it, and a bad DATABASE_URL must
	// be reported before anything runs.
	pool, err := wallet.ConnectPostgres(ctx)
	if err != nil {
		return nil, nil, err
	}
	s := &session{pool: pool}
	e := &env{config: c}
	fail := func(err error) (*env, *session, error) { s.close(); return nil, nil, err }
	store, err := wallet.OpenStore(ctx, pool)
	if err != nil {
		return fail(err)
	}
	e.store = store.Owned(c.prefix)
	if out.Postgres, err = wallet.PostgresVersion(ctx, pool); err != nil {
		return fail(err)
	}
	if needsRedis(chosen) {
		if e.rdb, err = wallet.Connect(ctx); err != nil {
			return fail(err)
		}
		if out.Redis, err = wallet.RedisVersion(ctx, e.rdb); err != nil {
			e.rdb.Close()
			return fail(err)
		}
	}
	s.ctl, err = wallet.Connect(ctx)
	if err != nil && e.rdb != nil {
		e.rdb.Close()
		return fail(err)
	}
	s.work, s.stop = context.WithCancelCause(ctx)
	if s.ctl != nil {
		if s.lease, err = runlease.Take(ctx, s.ctl, c.prefix); err != nil {
			if e.rdb != nil {
				e.rdb.Close()
			}
			return fail(err)
		}
		s.unwatch = context.AfterFunc(s.lease.Context(), func() {
			s.stop(fmt.Errorf("%w on prefix %q, so its row and keys may be another run's now: %w", errLeaseLost, c.prefix, context.Cause(s.lease.Context())))
		})
	}
	if rdb := e.rdb; rdb != nil {
		context.AfterFunc(s.work, func() { rdb.Close() })
	}
	return e, s, nil
}

// afterWork returns the context for what follows the work: deleting the
// row and the keys. It ignores Ctrl-C, and its deadline leaves room for
// the release of the run lease (lock.ReleaseTimeout), so that the whole
// clean-up takes at most cli.CleanupTimeout even when a service is frozen.
func afterWork(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cli.CleanupTimeout-lock.ReleaseTimeout)
}

// cleanup deletes the wallet row and the run's keys within fin, the two at
// once (a frozen Redis must not keep the row from being deleted), and
// gives the prefix back. It returns "", or one line naming what it left
// and the commands that remove it. A run that lost its lease deletes
// nothing: another run may own the prefix by now.
func (s *session) cleanup(fin context.Context, e *env) string {
	var keys []string
	if e.rdb != nil {
		keys = []string{e.lockKey(), lock.FenceKey(e.lockKey())}
	}
	var rowErr, keysErr error
	if cause := context.Cause(s.work); errors.Is(cause, errLeaseLost) {
		rowErr = errLeaseLost
		if len(keys) > 0 {
			keysErr = errLeaseLost
		}
	} else {
		var wg sync.WaitGroup
		wg.Go(func() {
			rowErr = again(fin, func(ctx context.Context) error { return e.store.Delete(ctx, e.id) })
		})
		if len(keys) > 0 {
			wg.Go(func() {
				keysErr = again(fin, func(ctx context.Context) error { return s.ctl.Del(ctx, keys...).Err() })
			})
		}
		wg.Wait()
	}
	if s.unwatch != nil {
		s.unwatch()
	}
	s.pgStuck = rowErr != nil && fin.Err() != nil
	if keysErr != nil && fin.Err() != nil {
		// Redis did not answer in time, and would not answer the lease's
		// release either: closing the client ends the lease's watchdog
		// call at once, and the lease expires within runlease.TTL.
		s.ctl.Close()
	}
	s.lease.Close(fin)
	var left, commands []string
	if rowErr != nil {
		left = append(left, fmt.Sprintf("wallet %d in PostgreSQL (%s)", e.id, oneLine(rowErr)))
		commands = append(commands, cli.PostgresDelete(e.prefix, e.id))
	}
	if keysErr != nil {
		left = append(left, fmt.Sprintf("%d keys in Redis (%s)", len(keys), oneLine(keysErr)))
		commands = append(commands, cli.RedisDel(s.ctl.Options(), keys...))
	}
	if len(left) == 0 {
		return ""
	}
	return "could not delete " + strings.Join(left, " and ") + "; remove them with: " + strings.Join(commands, "; ")
}

// close ends the work and closes the services. The phases' Redis client
// is closed by the end of the work.
func (s *session) close() {
	if s.stop != nil {
		s.stop(nil)
	}
	if s.ctl != nil {
		s.ctl.Close()
	}
	if s.pgStuck {
		// pgx sends a cancel request for each call that Ctrl-C cut short,
		// and waits up to 15 s for an answer that a frozen PostgreSQL never
		// gives; Close waits for those. The run is over: let them finish
		// on their own.
		go s.pool.Close()
		return
	}
	s.pool.Close()
}

// again calls f until it succeeds or ctx ends: a service that is
// restarting gets the whole clean-up time to come back.
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
