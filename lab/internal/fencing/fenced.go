package fencing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/lock"
)

// Fenced takes the lease on key with a fencing token, runs write with that
// token and gives the lease back. write must hand the fence to the
// database with every read and write (postgres.Store.Claim and WriteFenced
// do), so that PostgreSQL, not the lease, decides whether the write lands.
//
// When write fails with a *ledger.StaleFenceError, nothing was written. Fenced
// then raises the fence counter of key to the fence PostgreSQL holds
// (lock.RaiseFence: a no-op unless Redis lost the counter) before giving
// the lease back, so that the next holder's fence is above it, and returns
// the error as it is: it does not try again, the caller decides.
//
// Fenced runs no watchdog: a holder that outlives its lease is stopped by the
// fence, at the cost of its work. Its errors are those of
// lock.AcquireFenced, those of write, and, joined to a stale fence, the
// error of a heal that failed. Whether the release succeeds does not
// matter: a lease that already expired is what fencing is for, and one
// that could not be deleted expires after ttl.
func Fenced(ctx context.Context, rdb lock.Client, key string, ttl time.Duration, write func(ctx context.Context, fence int64) (bool, error)) (bool, error) {
	l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), ttl)
	if err != nil {
		return false, err
	}
	// Release runs even when ctx has ended; see lock.ReleaseTimeout.
	defer l.Release(ctx)

	ok, err := write(ctx, l.Fence)
	// Heal while still holding the lease (if it is still ours): the next
	// AcquireFenced then draws its fence after the raise.
	return ok, Heal(ctx, rdb, key, err)
}

// Heal looks at the error of a fenced write on the wallet that lock key
// guards. When it is a *ledger.StaleFenceError, Heal raises the key's fence
// counter to the fence PostgreSQL holds (a no-op unless Redis lost the
// counter). It returns err, joined with the raise's error if that failed.
func Heal(ctx context.Context, rdb lock.Client, key string, err error) error {
	var stale *ledger.StaleFenceError
	if !errors.As(err, &stale) {
		return err
	}
	if _, herr := lock.RaiseFence(ctx, rdb, lock.FenceKey(key), stale.Highest); herr != nil {
		return fmt.Errorf("%w; and fencing could not heal the fence counter: %w", err, herr)
	}
	return err
}
