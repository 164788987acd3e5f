// Package wallet keeps one balance in Redis and spends from it the naive
// way: read it, check it, write it back. Spend is right only while nothing
// else touches the balance between its read and its write; the steps of
// this repo are about what can keep the others out.
package wallet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// BalanceKey is the key of wallet 42's balance, the one the steps spend
// from. A run's -prefix goes in front of it.
const BalanceKey = "wallet:42:balance"

// ErrUnknownOutcome marks a spend whose write was sent and never answered:
// a timeout, a dropped connection, a context that ended in flight. The
// write may have landed or not, and no client can tell which; Check counts
// such spends apart instead of calling them failures.
var ErrUnknownOutcome = errors.New("wallet: outcome unknown")

// Spend reads the balance at key, refuses (false, nil) when it is below
// amount, works for a while (the time a real payment spends deciding) and
// writes the new balance back. Between the read and the write anyone may
// write; that is the bug the later steps fix.
//
// The work stops when ctx ends, and then nothing is written: a watchdog
// that cancels ctx (step 3) stops the spend before its write.
func Spend(ctx context.Context, rdb redis.Cmdable, key string, amount int64, work time.Duration) (bool, error) {
	bal, err := rdb.Get(ctx, key).Int64()
	if err != nil {
		return false, fmt.Errorf("wallet: read %s: %w", key, err)
	}
	if bal < amount {
		return false, nil
	}
	if err := Work(ctx, work); err != nil {
		return false, err
	}
	if err := rdb.Set(ctx, key, bal-amount, 0).Err(); err != nil {
		return false, WriteError(key, err)
	}
	return true, nil
}

// Work stands for what a payment does between its read and its write (a
// fraud check, a call to another service): it waits d, or until ctx ends,
// and then says why it stopped.
func Work(ctx context.Context, d time.Duration) error {
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	if ctx.Err() != nil { // asked after the wait too: both may be ready at once
		return fmt.Errorf("wallet: stopped before the write: %w", context.Cause(ctx))
	}
	return nil
}

// WriteError wraps the error of a write that was sent. A reply from the
// server (READONLY, say) means it did not run; anything else leaves its
// outcome unknown, and the error then matches ErrUnknownOutcome.
func WriteError(key string, err error) error {
	if _, replied := errors.AsType[redis.Error](err); replied {
		return fmt.Errorf("wallet: write %s: %w", key, err)
	}
	return fmt.Errorf("wallet: write %s: %w: %w", key, ErrUnknownOutcome, err)
}
