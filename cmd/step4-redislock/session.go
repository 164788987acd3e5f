package main

// What a run holds besides its spenders: two Redis clients, the run lease
// on its prefix, the context the spenders work under, and the clean-up.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/runlease"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

type session struct {
	rdb     *redis.Client   // the spenders'; closed when work ends
	ctl     *redis.Client   // the run lease, read-backs after Ctrl-C, the clean-up
	lease   *runlease.Lease // this run's hold on its prefix
	work    context.Context // ends at Ctrl-C, or when the lease is lost
	stop    context.CancelCauseFunc
	unwatch func() bool // stops watching the lease
}

var errLeaseLost = errors.New("lost the run lease")

// start connects and takes the run lease on prefix, so that a second run
// on it is refused instead of resetting this one's balance.
//
// Why two clients: go-redis gives up a read when its deadline passes, not
// when its context is cancelled, so a spender stuck on a frozen Redis
// would hold Ctrl-C up for seconds. Closing the spenders' client when the
// work ends cuts such calls short at once; ctl, whose calls after the work
// all have a deadline, then reads back and cleans up.
func start(ctx context.Context, prefix string) (*session, error) {
	rdb, err := wallet.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ctl, err := wallet.Connect(ctx)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	lease, err := runlease.Take(ctx, ctl, prefix)
	if err != nil {
		rdb.Close()
		ctl.Close()
		return nil, err
	}
	s := &session{rdb: rdb, ctl: ctl, lease: lease}
	s.work, s.stop = context.WithCancelCause(ctx)
	s.unwatch = context.AfterFunc(lease.Context(), func() {
		s.stop(fmt.Errorf("%w on prefix %q, so its keys may be another run's now: %w", errLeaseLost, prefix, context.Cause(lease.Context())))
	})
	context.AfterFunc(s.work, func() { rdb.Close() })
	return s, nil
}

// afterWork returns the context for what follows the work: reading back
// and deleting keys. It ignores Ctrl-C, and its deadline leaves room for
// the release of the run lease (lock.ReleaseTimeout), so that the whole
// clean-up takes at most cli.CleanupTimeout even when Redis is frozen.
func afterWork(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cli.CleanupTimeout-lock.ReleaseTimeout)
}

// cleanup deletes the run's keys within fin and gives the prefix back. It
// returns "", or one line naming what it left and the command that
// removes it. A run that lost its lease deletes nothing: another run may
// own the prefix by now.
func (s *session) cleanup(fin context.Context, prefix string) string {
	s.unwatch()
	keys := []string{wallet.BalanceKey(prefix, wallet.DemoWallet), wallet.LockKey(prefix, wallet.DemoWallet)}
	var err error
	if cause := context.Cause(s.work); errors.Is(cause, errLeaseLost) {
		err = errLeaseLost
	} else {
		err = again(fin, func(ctx context.Context) error { return s.ctl.Del(ctx, keys...).Err() })
	}
	if fin.Err() != nil {
		// Redis did not answer in time, and would not answer the lease's
		// release either: closing the client ends the lease's watchdog
		// call at once, and the lease expires within runlease.TTL.
		s.ctl.Close()
	}
	s.lease.Close(fin)
	if err == nil {
		return ""
	}
	return fmt.Sprintf("could not delete %d keys in Redis (%s); remove them with: %s", len(keys), oneLine(err), cli.RedisDel(s.ctl.Options(), keys...))
}

func (s *session) close() {
	s.stop(nil)
	s.rdb.Close()
	s.ctl.Close()
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
