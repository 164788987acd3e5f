package step

// The run's lease, <prefix>walletlock:run: while a run holds it, a second
// run on the same keys is refused. It is bsm/redislock's, not the lock of
// lock/, which `make exercise` turns into stubs for a learner to write:
// the steps that do not teach those functions must still run.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
)

// leaseTTL is how long the run's lease lives unless it is refreshed.
const leaseTTL = 10 * time.Second

// hold takes the run's lease at key in one try, and refreshes it every
// third of its TTL while the run lasts. The context it returns ends, with
// the reason as its cause, when a refresh fails: a run that lost its lease
// stops. giveBack stops the refreshes and deletes the lease.
func hold(ctx context.Context, rdb redis.UniversalClient, key, prefix string) (run context.Context, giveBack func(context.Context), err error) {
	lease, err := redislock.Obtain(ctx, rdb, key, leaseTTL, nil) // nil: no retry
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil, nil, fmt.Errorf("another run holds %s, and with it the keys under -prefix %q: wait for it to end, or pass another -prefix", key, prefix)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("take the run's lease %s: %w", key, err)
	}
	run, stop := context.WithCancelCause(ctx)
	go func() {
		tick := time.NewTicker(leaseTTL / 3)
		defer tick.Stop()
		for {
			select {
			case <-run.Done():
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(run, leaseTTL/3)
			err := lease.Refresh(rctx, leaseTTL, nil)
			cancel()
			if err != nil && run.Err() == nil {
				stop(fmt.Errorf("lost the run's lease %s, so another run may use its keys: %w", key, err))
				return
			}
		}
	}()
	return run, func(ctx context.Context) {
		stop(context.Canceled)
		lease.Release(ctx) // when that fails, the lease expires within leaseTTL
	}, nil
}
