package loadtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/postgres"
)

// wallets are the n wallets of a run, in bulk: setting up and reading back
// 10,000 of them must take a few round trips, not 10,000. In Redis they are
// the keys wallet.BalanceKey(prefix, id) (and the lock keys next to them,
// see lockKeys); in PostgreSQL the rows first .. first+n-1 of
// postgres.Store's table.
type wallets struct {
	prefix  string
	first   int64
	n       int
	rdb     redis.UniversalClient
	store   *postgres.Store // nil when no strategy of the run uses PostgreSQL
	touched int             // the wallets 0 .. touched-1 may have keys in Redis
}

// batch is how many commands go into one Redis pipeline.
const batch = 1000

func (w *wallets) id(i int) int64 { return w.first + int64(i) }

// pipelined sends one command per wallet, for the first n wallets, in
// pipelines of batch commands, and calls check on each command's result.
// It stops between two pipelines when ctx ends.
func (w *wallets) pipelined(ctx context.Context, n int, add func(p redis.Pipeliner, id int64) redis.Cmder, check func(i int, c redis.Cmder) error) error {
	for lo := 0; lo < n; lo += batch {
		if err := ctx.Err(); err != nil {
			return err
		}
		hi := min(lo+batch, n)
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
		for k, c := range cmds {
			if err := check(lo+k, c); err != nil {
				return err
			}
		}
	}
	return nil
}

// resetRedis gives every wallet balance in Redis and deletes the locks an
// interrupted earlier run may have left. It calls done after each pipeline
// with how many wallets are set up so far.
func (w *wallets) resetRedis(ctx context.Context, balance int64, done func(n, of int)) error {
	err := w.pipelined(ctx, w.n, func(p redis.Pipeliner, id int64) redis.Cmder {
		// Counted before it is sent: a pipeline cut short may have
		// written some of its keys.
		w.touched = max(w.touched, int(id-w.first)+1)
		lockKey := wallet.LockKey(w.prefix, id)
		keys := lockKeys(lockKey)
		p.Del(ctx, keys[:len(keys)-1]...) // not the fence counter
		return p.Set(ctx, wallet.BalanceKey(w.prefix, id), balance, 0)
	}, func(i int, _ redis.Cmder) error {
		if (i+1)%batch == 0 || i+1 == w.n {
			done(i+1, w.n)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("loadtest: set up %d wallets in Redis: %w", w.n, err)
	}
	return nil
}

// lockKeys are the keys a wallet's locks may leave: the lock itself, the
// fair lock's queue, presence and hand-off stream (named as package fair
// names them, next to a lock key that has a hash tag; all expire within
// a second anyway), and the fence counter, last.
func lockKeys(lockKey string) []string {
	return []string{lockKey, lockKey + ":queue", lockKey + ":present", lockKey + ":handoff", lock.FenceKey(lockKey)}
}

// balancesRedis reads every wallet's balance from Redis.
func (w *wallets) balancesRedis(ctx context.Context) ([]int64, error) {
	bal := make([]int64, w.n)
	err := w.pipelined(ctx, w.n, func(p redis.Pipeliner, id int64) redis.Cmder {
		return p.Get(ctx, wallet.BalanceKey(w.prefix, id))
	}, func(i int, c redis.Cmder) error {
		v, err := c.(*redis.StringCmd).Int64()
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w at %s", wallet.ErrNoWallet, wallet.BalanceKey(w.prefix, w.id(i)))
		}
		bal[i] = v
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("loadtest: read %d balances from Redis: %w", w.n, err)
	}
	return bal, nil
}

// cleanup deletes every key and row the run wrote, and nothing else. It
// reports what it may have left in Redis and in PostgreSQL.
func (w *wallets) cleanup(ctx context.Context) (redisLeft, postgresLeft bool, err error) {
	var errs []error
	if w.touched > 0 {
		err := retry(ctx, func() error {
			return w.pipelined(ctx, w.touched, func(p redis.Pipeliner, id int64) redis.Cmder {
				keys := append(lockKeys(wallet.LockKey(w.prefix, id)), wallet.BalanceKey(w.prefix, id))
				return p.Del(ctx, keys...)
			}, func(int, redis.Cmder) error { return nil })
		})
		if redisLeft = err != nil; redisLeft {
			errs = append(errs, fmt.Errorf("loadtest: delete the Redis keys under %s: %w", w.prefix, err))
		}
	}
	if w.store != nil {
		err := retry(ctx, func() error { return w.store.DeleteRange(ctx, w.first, w.n) })
		if postgresLeft = err != nil; postgresLeft {
			errs = append(errs, err)
		}
	}
	return redisLeft, postgresLeft, errors.Join(errs...)
}

// transient reports whether err may go away if the call is made again: a
// timeout or a lost connection, not an answer from the server, unless the
// answer is a cluster's between two masters of a slot (a failover).
func transient(err error) bool {
	var reply redis.Error // redis.Nil too
	var pgErr *pgconn.PgError
	if services.SlotMoving(err) {
		return true
	}
	return !errors.As(err, &reply) && !errors.As(err, &pgErr) &&
		!errors.Is(err, wallet.ErrNoWallet) && !errors.Is(err, wallet.ErrOwned)
}

// judge is the verdict of every step, wallet by wallet: each balance must
// equal initial minus amount times that wallet's accepted spends, plus
// some of its spends whose outcome is unknown (wallet.CheckUnknown), and
// never be negative. It returns the check line's figures summed over the
// wallets (OK only if every wallet is, Landed the unknown spends that
// landed in all), how many wallets are off, and by how much money in all.
// unknown may be nil: no unknown outcome.
func judge(initial, amount int64, accepted, unknown, balances []int64) (v wallet.Verdict, off int, money int64) {
	var total, sumAccepted, sumUnknown, sumBalance int64
	landed := 0
	for i, b := range balances {
		var u int64
		if unknown != nil {
			u = unknown[i]
		}
		w := wallet.CheckUnknown(initial, amount, int(accepted[i]), int(u), b)
		if w.OK {
			landed += w.Landed
		} else {
			off++
			money = addCapped(money, offBy(w, amount))
		}
		total += initial // Config.Validate keeps initial*wallets in an int64
		sumAccepted += accepted[i]
		sumUnknown += u
		sumBalance += b
	}
	v = wallet.CheckUnknown(total, amount, int(sumAccepted), int(sumUnknown), sumBalance)
	v.OK, v.Landed = off == 0, landed
	if !v.OK {
		v.Landed = -1
	}
	return v, off, money
}

// offBy is how far a wallet that is off is from the nearest balance its
// spends allow: above the highest, below the lowest, between two steps,
// or below zero.
func offBy(w wallet.Verdict, amount int64) int64 {
	b := w.Balance
	switch {
	case b > w.Expected:
		return subCapped(b, w.Expected)
	case b < w.Lowest:
		return subCapped(w.Lowest, b)
	case b < 0:
		return subCapped(0, b)
	default: // in the range, but not a whole number of spends away
		rem := subCapped(w.Expected, b) % amount
		return min(rem, amount-rem)
	}
}

// subCapped is a-b, a >= b, capped at MaxInt64 where it would overflow.
func subCapped(a, b int64) int64 {
	if d := a - b; d >= 0 {
		return d
	}
	return math.MaxInt64
}

func addCapped(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}

func abs(n int64) int64 {
	if n < 0 {
		return -n
	}
	return n
}

// formatMoney writes 1234567 as "1,234,567", for the table.
func formatMoney(n int64) string {
	s := strconv.FormatInt(abs(n), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	if n < 0 {
		return "-" + s
	}
	return s
}
