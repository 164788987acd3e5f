package loadtest

import (
	"context"
	"fmt"
	"time"

	"github.com/bsm/redislock"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/redlock"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/wallet"
)

// RoundTrips is how many network round trips, to each service, one critical
// section of a strategy needs. The ceiling is built from it.
type RoundTrips struct {
	Redis    int `json:"redis"`
	Postgres int `json:"postgres"`
}

// A strategy is one way to spend, and what its critical section costs.
type strategy struct {
	name string
	// trips counts the round trips of the critical section. It runs from
	// the moment a server grants one spender the wallet (Redis runs the
	// SET NX, PostgreSQL locks the row) to the moment the next spender can
	// have it (Redis runs the release, PostgreSQL commits). The reply to
	// the call that grants it and the request of the call that ends it are
	// half a round trip each: one together. What happens before the grant
	// (BEGIN, the wait) or after the end (the release's reply) overlaps
	// with the next holder and is not counted.
	trips RoundTrips
	// workOutside is set when the work runs before the spend touches the
	// wallet, not inside a critical section: the section is then only
	// its round trips, and with none it has no serial ceiling.
	workOutside bool
	locks       bool // takes a Redis lock: lock-wait and attempts come from it
	inPostgres  bool // balances live in PostgreSQL, not Redis
	spend       func(r *runner, c call) outcome
}

// strategies is the table of the report, in the order `-strategy all` runs
// them (lesson.LoadTest's order).
var strategies = []strategy{
	// GET, work, SET, no lock. Nothing is exclusive, which is the bug:
	// spends of one wallet overlap and overwrite each other. It is held to
	// the ceiling it would have if it were exclusive (the GET's reply and
	// the SET's request), so an efficiency above 100% measures how many
	// spends it ran at once on one wallet, each losing another's update.
	{name: "none", trips: RoundTrips{Redis: 1}, spend: spendNone},
	// SET NX grants the lock; its reply and the release's request (1),
	// GET (1), SET (1).
	{name: "lock", trips: RoundTrips{Redis: 3}, locks: true, spend: spendLock},
	// The same calls, made by redislock: its obtain script's reply and its
	// release script's request (1), GET (1), SET (1).
	{name: "redislock", trips: RoundTrips{Redis: 3}, locks: true, spend: spendRedislock},
	// The same again, made by go-redsync: SET NX's reply and its release
	// script's request (1), GET (1), SET (1).
	{name: "redsync", trips: RoundTrips{Redis: 3}, locks: true, spend: func(r *runner, c call) outcome { return spendNodes(r, c, r.redsync) }},
	// go-redsync's mutex over three independent nodes (Redlock, see
	// redlock.go): SET NX goes to every node at once, and the reply that
	// completes a majority and the release script's request are 1; then
	// GET (1) and SET (1) on the wallets' Redis.
	{name: Redlock, trips: RoundTrips{Redis: 3}, locks: true, spend: func(r *runner, c call) outcome { return spendNodes(r, c, r.redlock) }},
	// The fair lock (fair.Lock): the release script makes the first
	// waiter the holder inside Redis, and its message reaches the waiter
	// half a round trip later. GET (1), SET (1), the release's request and
	// the message (1). Waiters queue in Redis and are told, so no one
	// sleeps while the wallet is free.
	{name: "fair", trips: RoundTrips{Redis: 3}, locks: true, spend: spendFair},
	// The acquire script's reply and the release's request on Redis (1);
	// the claim, an UPDATE ... RETURNING that reads and stamps the row,
	// and the fenced write on PostgreSQL (2).
	{name: "fenced", trips: RoundTrips{Redis: 1, Postgres: 2}, locks: true, inPostgres: true, spend: spendFenced},
	// No lock: the work first, then one script that checks the balance
	// and takes the amount (atomic_spend.lua). Redis runs one script at a
	// time, so the check and the write cannot be split; nothing waits
	// while another spend works, and there is no serial ceiling.
	{name: "atomic", workOutside: true, spend: spendAtomic},
	// No lock, but two spends of one wallet that both succeed cannot
	// overlap: the second must read after the first wrote. From the read's
	// reply to the versioned UPDATE's request: 1. Attempts that lose the
	// race redo the work and are not in the ceiling.
	{name: "version", trips: RoundTrips{Postgres: 1}, inPostgres: true, spend: spendVersion},
	// SELECT ... FOR UPDATE locks the row; its reply and COMMIT's request
	// (1), the UPDATE (1). BEGIN is sent before the lock, while the
	// previous holder still has it, and a waiter blocked in PostgreSQL is
	// woken by the commit itself, with no polling.
	{name: "forupdate", trips: RoundTrips{Postgres: 2}, inPostgres: true, spend: spendForUpdate},
}

// Strategies returns the names of every strategy, in the order they run.
func Strategies() []string {
	names := make([]string, len(strategies))
	for i, s := range strategies {
		names[i] = s.name
	}
	return names
}

func strategyByName(name string) (strategy, bool) {
	for _, s := range strategies {
		if s.name == name {
			return s, true
		}
	}
	return strategy{}, false
}

// retryWait is how long lock and redislock waiters sleep between attempts:
// step 2's hand-built lock and step 4's jitter strategy, the same range.
var retryWait lock.Jitter // the zero Jitter: 5 to 15 ms

// call is one spend of wallet id with two contexts. Only waiting is cut
// short by the end of a phase: a spender that gives up waiting for a lock
// has done nothing. Once a spend holds its wallet it runs to the end on
// ctx, which -timeout ends, or a moment after Ctrl-C (see stopBudget); a
// write cut short that way is an unknown outcome, never a failure.
type call struct {
	ctx  context.Context // the spend itself
	wait context.Context // the wait for a lock: ctx, ended early when the phase ends
	id   int64
	pool *poolClock // what the spend's calls have waited for a connection so far
}

// lockWait is the time since start, when the spend began to take its
// lock, less what its calls have waited for a connection meanwhile; at
// least a nanosecond, so that a spend that took a lock records a wait.
func (c call) lockWait(start time.Time) time.Duration {
	d := time.Since(start)
	if c.pool != nil {
		d -= c.pool.total()
	}
	return max(d, time.Nanosecond)
}

// outcome is what one spend reports.
type outcome struct {
	ok        bool          // written: counts against the wallet's balance
	err       error         // may come with ok: a release that failed after the write
	attempts  int           // lock attempts, or tries of the versioned write
	waited    time.Duration // time to get the lock, for strategies that take one, less its connection waits
	pooled    time.Duration // time the spend waited for its turn at the pool and its calls for a connection (see turns, poolClock), at most the spend's
	pooledPG  time.Duration // the part of it spent waiting for a PostgreSQL connection
	abandoned bool          // the phase ended while it waited: nothing done
	read      int64         // the balance it read, for its record; history.NoRead: not known
}

func spendNone(r *runner, c call) outcome {
	ok, err := wallet.Spend(c.ctx, ledger.Observed(c.ctx, r.rdb), ledger.BalanceKey(r.cfg.Prefix, c.id), r.cfg.Amount, r.cfg.Work)
	return outcome{ok: ok, err: err, attempts: 1}
}

// waitFailed sorts out an error from taking a lock: the phase ended (the
// spend is abandoned and counts nowhere) or a real failure.
func waitFailed(c call, err error) outcome {
	if c.wait.Err() != nil && c.ctx.Err() == nil && context.Cause(c.wait) != errSpendTimeout {
		return outcome{abandoned: true}
	}
	return outcome{err: err}
}

// held is a lease a spend took: its watchdog (step 3), its release, and
// the attempts taking it made.
type held struct {
	keepAlive func(context.Context) (context.Context, context.CancelFunc)
	release   func(context.Context) error
	attempts  int
}

// spendHeld takes a lease on the wallet's lock key with take, runs the
// read-modify-write under its watchdog, then releases it. A release that
// finds the lease gone is an error, but a write that landed still counts.
func spendHeld(r *runner, c call, take func(ctx context.Context, key string) (held, error)) outcome {
	start := time.Now()
	h, err := take(c.wait, ledger.LockKey(r.cfg.Prefix, c.id))
	if err != nil {
		return waitFailed(c, err)
	}
	waited := c.lockWait(start)
	work, stop := h.keepAlive(c.ctx)
	ok, err := wallet.Spend(work, ledger.Observed(work, r.rdb), ledger.BalanceKey(r.cfg.Prefix, c.id), r.cfg.Amount, r.cfg.Work)
	stop()
	if rerr := h.release(c.ctx); rerr != nil && err == nil {
		err = rerr
	}
	return outcome{ok: ok, err: err, attempts: h.attempts, waited: waited}
}

func spendLock(r *runner, c call) outcome {
	return spendLease(r, c, func(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
		return lock.Acquire(ctx, r.rdb, key, ttl)
	})
}

// spendFair is spendLock with the run's fair.Lock. Its write goes out
// under the watchdog, not with the release in one round trip
// (Lock.ReleaseAfter): a pipeline that waits for a pooled connection after
// the watchdog stopped can land after the lease expired. With 10,000
// workers on 256 connections it did, in 3 of 9 runs.
func spendFair(r *runner, c call) outcome { return spendLease(r, c, r.fair.Acquire) }

// spendLease spends under a lease of package lock taken with acquire (a
// fair lease passes to the next waiter on release).
func spendLease(r *runner, c call, acquire func(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error)) outcome {
	return spendHeld(r, c, func(ctx context.Context, key string) (held, error) {
		l, err := acquire(ctx, key, r.cfg.TTL)
		if err != nil {
			return held{}, err
		}
		watch := func(ctx context.Context) (context.Context, context.CancelFunc) { return l.Watch(ctx, r.cfg.TTL) }
		return held{watch, l.Release, l.Attempts}, nil
	})
}

func spendRedislock(r *runner, c call) outcome {
	return spendHeld(r, c, func(ctx context.Context, key string) (held, error) {
		// One counting wrapper per Obtain: it counts the attempts that
		// found the lock taken.
		retry := &countingRetry{Strategy: retryWait}
		l, err := obtainRedislock(ctx, r.rdb, key, r.cfg.TTL, &redislock.Options{RetryStrategy: retry})
		if err != nil {
			return held{}, err
		}
		refresh := refreshRedislock(l, r.cfg.TTL)
		return held{
			keepAlive: func(ctx context.Context) (context.Context, context.CancelFunc) {
				return lock.KeepAlive(ctx, r.cfg.TTL, refresh)
			},
			release: func(ctx context.Context) error {
				if err := l.Release(ctx); err != nil {
					return fmt.Errorf("redislock release: %w", err)
				}
				return nil
			},
			attempts: int(retry.busy.Load()) + 1,
		}, nil
	})
}

// spendNodes spends under a Redlock on nodes (internal/redlock):
// go-redsync's mutex, tried again after step 4's jittered waits in place
// of redsync's 50 to 250 ms, until the wait ends, as the other locks are.
// The redsync strategy runs it on the one Redis of the run, the redlock
// strategy on a majority of three nodes.
func spendNodes(r *runner, c call, nodes *redlock.Nodes) outcome {
	return spendHeld(r, c, func(ctx context.Context, key string) (held, error) {
		l, err := nodes.Acquire(ctx, key, r.cfg.TTL)
		if err != nil {
			return held{}, err
		}
		extend := func(ctx context.Context) (context.Context, context.CancelFunc) {
			return lock.KeepAlive(ctx, r.cfg.TTL, l.Extend)
		}
		return held{extend, l.Release, l.Attempts}, nil
	})
}

// spendFenced spends with a fencing token checked by PostgreSQL, healing
// the fence counter when PostgreSQL refuses it (ledger.Heal). It runs no
// watchdog: PostgreSQL refuses a holder that outlived its lease.
func spendFenced(r *runner, c call) outcome {
	key := ledger.LockKey(r.cfg.Prefix, c.id)
	start := time.Now()
	l, err := lock.AcquireFenced(c.wait, r.rdb, key, lock.FenceKey(key), r.cfg.TTL)
	if err != nil {
		return waitFailed(c, err)
	}
	waited := c.lockWait(start)
	ok, err := r.store.SpendFenced(c.ctx, c.id, l.Fence, r.cfg.Amount, r.cfg.Work)
	err = ledger.Heal(c.ctx, r.rdb, lock.FenceKey(key), err)
	// A lease that expired is what the fence is for: the release's result
	// changes nothing, and a lease it failed to delete expires after TTL.
	_ = l.Release(c.ctx)
	return outcome{ok: ok, err: err, attempts: l.Attempts, waited: waited}
}

func spendVersion(r *runner, c call) outcome {
	ok, conflicts, err := r.store.SpendVersioned(c.ctx, c.id, r.cfg.Amount, r.cfg.Work)
	return outcome{ok: ok, err: err, attempts: 1 + conflicts}
}

func spendForUpdate(r *runner, c call) outcome {
	ok, err := r.store.SpendForUpdate(c.ctx, c.id, r.cfg.Amount, r.cfg.Work)
	return outcome{ok: ok, err: err, attempts: 1}
}
