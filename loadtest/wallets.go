package loadtest

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// wallets are the n wallets of a run, in bulk: setting up and reading back
// 10,000 of them must take a few round trips, not 10,000. In Redis they are
// the keys wallet.BalanceKey(prefix, id) (and the lock and fence keys next
// to them); in PostgreSQL the rows first .. first+n-1 of wallet.Store's
// table.
type wallets struct {
	prefix string
	first  int64
	n      int
	rdb    *redis.Client
	store  *wallet.Store // nil when no strategy of the run uses PostgreSQL
}

// batch is how many commands go into one Redis pipeline.
const batch = 1000

func (w wallets) id(i int) int64 { return w.first + int64(i) }

// pipelined sends one command per wallet in pipelines of batch commands,
// and calls check on each command's result.
func (w wallets) pipelined(ctx context.Context, add func(p redis.Pipeliner, id int64) redis.Cmder, check func(i int, c redis.Cmder) error) error {
	for lo := 0; lo < w.n; lo += batch {
		hi := min(lo+batch, w.n)
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
// interrupted earlier run may have left.
func (w wallets) resetRedis(ctx context.Context, balance int64) error {
	err := w.pipelined(ctx, func(p redis.Pipeliner, id int64) redis.Cmder {
		p.Del(ctx, wallet.LockKey(w.prefix, id))
		return p.Set(ctx, wallet.BalanceKey(w.prefix, id), balance, 0)
	}, func(int, redis.Cmder) error { return nil })
	if err != nil {
		return fmt.Errorf("loadtest: set up %d wallets in Redis: %w", w.n, err)
	}
	return nil
}

// balancesRedis reads every wallet's balance from Redis.
func (w wallets) balancesRedis(ctx context.Context) ([]int64, error) {
	bal := make([]int64, w.n)
	err := w.pipelined(ctx, func(p redis.Pipeliner, id int64) redis.Cmder {
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

// cleanup deletes every key and row the run wrote, and nothing else.
func (w wallets) cleanup(ctx context.Context) error {
	var errs []error
	if w.rdb != nil {
		err := w.pipelined(ctx, func(p redis.Pipeliner, id int64) redis.Cmder {
			lockKey := wallet.LockKey(w.prefix, id)
			return p.Del(ctx, wallet.BalanceKey(w.prefix, id), lockKey, lock.FenceKey(lockKey))
		}, func(int, redis.Cmder) error { return nil })
		if err != nil {
			errs = append(errs, fmt.Errorf("loadtest: delete the Redis keys under %s: %w", w.prefix, err))
		}
	}
	if w.store != nil {
		errs = append(errs, w.store.DeleteRange(ctx, w.first, w.n))
	}
	return errors.Join(errs...)
}

// judge is the verdict of every step, wallet by wallet: each balance must
// equal initial minus amount times that wallet's accepted spends, and never
// be negative. It returns the check line's figures summed over the wallets
// (OK only if every wallet is), how many wallets are off, and by how much
// money in all.
func judge(initial, amount int64, accepted, balances []int64) (v wallet.Verdict, off int, money int64) {
	var total, sumAccepted, sumBalance int64
	for i, b := range balances {
		w := wallet.Check(initial, amount, int(accepted[i]), b)
		if !w.OK {
			off++
			d := abs(b - w.Expected)
			if d == 0 {
				d = -b // the figures agree, but the wallet is overdrawn
			}
			money += d
		}
		total += initial
		sumAccepted += accepted[i]
		sumBalance += b
	}
	v = wallet.Check(total, amount, int(sumAccepted), sumBalance)
	v.OK = off == 0
	return v, off, money
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
