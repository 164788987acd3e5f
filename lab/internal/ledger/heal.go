package ledger

import (
	"context"
	"errors"
	"fmt"

	"example.com/walletlock/lab/lock"
)

// Heal keeps fencing working after Redis loses its fence counter: after a
// restart without persistence it starts again from 1, below the fences
// PostgreSQL has accepted, which stays safe but would refuse every holder
// until the counter climbed back. So when err, the error of a fenced claim
// or write, is a *StaleFenceError, Heal raises the counter at fenceKey to
// the fence PostgreSQL holds (lock.RaiseFence: a no-op unless Redis lost
// it). Heal while still holding the lease, so that the next AcquireFenced
// draws its fence after the raise. It returns err, joined with the raise's
// error if that failed.
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
