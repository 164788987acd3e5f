package loadtest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/lock"
)

// wallets are the n wallets of a run, in bulk: setting up and reading back
// 10,000 of them must take a few round trips, not 10,000.
type wallets struct {
	prefix  string
	first   int64
	n       int
	rdb     redis.UniversalClient
	store   *ledger.Store // nil when no strategy of the run uses PostgreSQL
	touched int           // the wallets 0 .. touched-1 may have a balance key in Redis
	// locked marks the wallets that a strategy taking a lock in Redis
	// spent from: only they may have lock keys (see cleanup). Made by
	// lockKeysFrom before the first such phase.
	locked []atomic.Bool
}

// lockKeysFrom readies the marks of the wallets that may have lock keys.
func (w *wallets) lockKeysFrom() {
	if w.locked == nil {
		w.locked = make([]atomic.Bool, w.n)
	}
}

// batch is how many commands go into one Redis pipeline, and lanes how
// many pipelines are in flight at once: at 100,000 wallets, clean-up
// after Ctrl-C has a second or two (see stopBudget).
const (
	batch = 1000
	lanes = 4
)

func (w *wallets) id(i int) int64 { return w.first + int64(i) }

// inLanes calls f on the wallets lo .. hi-1 of the first n, size at a
// time, lanes calls at once. It stops when ctx ends or a call fails, and
// returns the first error.
func inLanes(ctx context.Context, n, size int, f func(lo, hi int) error) error {
	var (
		next    atomic.Int64 // the first wallet of the next call
		mu      sync.Mutex
		failed  error
		running sync.WaitGroup
	)
	fail := func(err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if failed == nil {
			failed = err
		}
		return failed != nil
	}
	for range min(lanes, (n+size-1)/size) {
		running.Go(func() {
			for {
				lo := int(next.Add(int64(size))) - size
				if lo >= n || fail(ctx.Err()) {
					return
				}
				if fail(f(lo, min(lo+size, n))) {
					return
				}
			}
		})
	}
	running.Wait()
	return failed
}

// pipelined sends one command per wallet in pipelines of batch commands
// (see inLanes), and calls check on each command's result, one at a time.
func (w *wallets) pipelined(ctx context.Context, add func(p redis.Pipeliner, id int64) redis.Cmder, check func(i int, c redis.Cmder) error) error {
	var mu sync.Mutex
	return inLanes(ctx, w.n, batch, func(lo, hi int) error {
		cmds := make([]redis.Cmder, 0, hi-lo)
		_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < hi; i++ {
				cmds = append(cmds, add(p, w.id(i)))
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for k, c := range cmds {
			if err := check(lo+k, c); err != nil {
				return err
			}
		}
		return nil
	})
}

// spentOn notes that a spend that may leave lock keys went to wallet i
// (see cleanup).
func (w *wallets) spentOn(i int) {
	if w.locked == nil {
		return
	}
	w.locked[i].Store(true)
}

// reset gives every wallet balance, in PostgreSQL or in Redis, where it
// also deletes the locks an interrupted earlier run may have left. It
// calls done as wallets are set up, with how many are so far. Wallets
// that another run owns in PostgreSQL are refused, with who holds them
// and how to choose others.
func (w *wallets) reset(ctx context.Context, inPostgres bool, balance int64, done func(n, of int)) error {
	if !inPostgres {
		// Counted before anything is sent: a pipeline cut short may have
		// written some of its keys.
		w.touched = w.n
		set := 0
		err := w.pipelined(ctx, func(p redis.Pipeliner, id int64) redis.Cmder {
			keys := lockKeys(ledger.LockKey(w.prefix, id))
			p.Del(ctx, keys[:len(keys)-1]...) // not the fence counter
			return p.Set(ctx, ledger.BalanceKey(w.prefix, id), balance, 0)
		}, func(int, redis.Cmder) error {
			// Pipelines end out of order: count them, never two at once.
			if set++; set%batch == 0 || set == w.n {
				done(set, w.n)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("loadtest: set up %d wallets in Redis: %w", w.n, err)
		}
		return nil
	}
	err := w.store.ResetRange(ctx, w.first, w.n, balance, func(n int) { done(n, w.n) })
	if owned, ok := errors.AsType[*ledger.OwnedError](err); ok {
		return fmt.Errorf("loadtest: set up wallets %d to %d: %w: wallet %d belongs to the run with prefix %q; choose other wallets with -first-id, or another -prefix (without -first-id, each prefix gets ids of its own)",
			w.first, w.id(w.n-1), ledger.ErrOwned, owned.ID, owned.Owner)
	}
	return err
}

// lockKeys are the keys a wallet's locks may leave: the lock itself, the
// fair lock's queue, presence and hand-off stream (named as package fair
// names them, next to a lock key that has a hash tag; all expire within
// a second anyway), and the fence counter, last.
func lockKeys(lockKey string) []string {
	return []string{lockKey, lockKey + ":queue", lockKey + ":present", lockKey + ":handoff", lock.FenceKey(lockKey)}
}

// balances reads every wallet's balance, from PostgreSQL or from Redis.
func (w *wallets) balances(ctx context.Context, inPostgres bool) ([]int64, error) {
	if !inPostgres {
		bal := make([]int64, w.n)
		err := w.pipelined(ctx, func(p redis.Pipeliner, id int64) redis.Cmder {
			return p.Get(ctx, ledger.BalanceKey(w.prefix, id))
		}, func(i int, c redis.Cmder) error {
			v, err := c.(*redis.StringCmd).Int64()
			if errors.Is(err, redis.Nil) {
				return fmt.Errorf("%w at %s", ledger.ErrNoWallet, ledger.BalanceKey(w.prefix, w.id(i)))
			}
			bal[i] = v
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("loadtest: read %d balances from Redis: %w", w.n, err)
		}
		return bal, nil
	}
	return w.store.Balances(ctx, w.first, w.n)
}

// cleanup deletes every key and row the run wrote, and nothing else, the
// keys and the rows at once: a DEL per batch of wallets (one per wallet on
// a cluster) of their balance keys and, where a lock was taken, their lock
// keys. It reports what it may have left in Redis and in PostgreSQL.
func (w *wallets) cleanup(ctx context.Context) (redisLeft, postgresLeft bool, err error) {
	var redisErr, pgErr error
	var both sync.WaitGroup
	if w.touched > 0 {
		both.Go(func() {
			redisErr = retry(ctx, func() error {
				return inLanes(ctx, w.touched, batch, func(lo, hi int) error {
					if _, cluster := w.rdb.(*redis.ClusterClient); cluster {
						// A DEL's keys must share a slot there: a wallet's do.
						_, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
							for i := lo; i < hi; i++ {
								p.Del(ctx, w.keys(i, nil)...)
							}
							return nil
						})
						return err
					}
					var keys []string
					for i := lo; i < hi; i++ {
						keys = w.keys(i, keys)
					}
					return w.rdb.Del(ctx, keys...).Err()
				})
			})
		})
	}
	if w.store != nil {
		both.Go(func() {
			pgErr = retry(ctx, func() error {
				return inLanes(ctx, w.n, ledger.ResetBatch, func(lo, hi int) error {
					return w.store.DeleteRange(ctx, w.id(lo), hi-lo)
				})
			})
		})
	}
	both.Wait()
	var errs []error
	if redisLeft = redisErr != nil; redisLeft {
		errs = append(errs, fmt.Errorf("loadtest: delete the Redis keys under %s: %w", w.prefix, redisErr))
	}
	if postgresLeft = pgErr != nil; postgresLeft {
		errs = append(errs, pgErr)
	}
	return redisLeft, postgresLeft, errors.Join(errs...)
}

// keys appends to keys those wallet i may have in Redis: its balance, and
// its lock keys if a lock was taken on it.
func (w *wallets) keys(i int, keys []string) []string {
	id := w.id(i)
	keys = append(keys, ledger.BalanceKey(w.prefix, id))
	if w.locked != nil && w.locked[i].Load() {
		keys = append(keys, lockKeys(ledger.LockKey(w.prefix, id))...)
	}
	return keys
}

// transient reports whether err may go away if the call is made again: a
// timeout or a lost connection, not an answer from the server, unless the
// answer is a cluster's between two masters of a slot (a failover).
func transient(err error) bool {
	var reply redis.Error // redis.Nil too
	var pgErr *pgconn.PgError
	if env.SlotMoving(err) {
		return true
	}
	return !errors.As(err, &reply) && !errors.As(err, &pgErr) &&
		!errors.Is(err, ledger.ErrNoWallet) && !errors.Is(err, ledger.ErrOwned)
}
