package ledger

import (
	"context"
	"errors"
	"fmt"

	"example.com/walletlock/lab/lock"
)

// Heal keeps the join of a lease's fencing token (lock.AcquireFenced) and
// a wallet row that refuses writes from an older token (the Store)
// working after Redis loses its fence counter.
//
// Redis keeps the counter in memory; after a restart without persistence
// it starts again from 1, below the fences PostgreSQL has already
// accepted. That stays safe (PostgreSQL refuses every one of those low
// fences) but, left alone, it would refuse them until the counter had
// climbed back on its own. So when err, the error of a fenced claim or
// write, is a *StaleFenceError, Heal raises the counter at fenceKey to the
// fence PostgreSQL holds (lock.RaiseFence: a no-op unless Redis lost the
// counter), and the next holder gets a fence above it. Heal while still
// holding the lease (if it is still yours): the next AcquireFenced then
// draws its fence after the raise.
//
// It returns err, joined with the raise's error if that failed.
func Heal(ctx context.Context, rdb lock.Client, fenceKey string, err error) error {
	var stale *StaleFenceError
	if !errors.As(err, &stale) {
		return err
	}
	if _, herr := lock.RaiseFence(ctx, rdb, fenceKey, stale.Highest); herr != nil {
		return fmt.Errorf("%w; and the fence counter could not be healed: %w", err, herr)
	}
	return err
}
