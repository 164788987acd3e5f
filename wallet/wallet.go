// Package wallet keeps one balance in Redis and spends from it the naive
// way: read it, check it, write it back. Spend is right only while nothing
// else touches the balance between its read and its write; the steps of
// this repo are about what can keep the others out.
package wallet

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// Tally is what the calls of one Hammer reported.
type Tally struct {
	Accepted int     // returned true
	Refused  int     // returned false, no error: not enough money
	Unknown  int     // failed with ErrUnknownOutcome: may have landed
	Errors   []error // every error, the unknown ones too
}

// Add counts one spend's result.
func (t *Tally) Add(ok bool, err error) {
	switch {
	case err != nil:
		if errors.Is(err, ErrUnknownOutcome) {
			t.Unknown++
		}
		t.Errors = append(t.Errors, err)
	case ok:
		t.Accepted++
	default:
		t.Refused++
	}
}

// Hammer calls spend from n goroutines that all start at the same moment
// (they wait on one channel, closed when all of them exist) and counts
// what the calls report.
func Hammer(n int, spend func() (bool, error)) Tally {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		t     Tally
		start = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			ok, err := spend()
			mu.Lock()
			defer mu.Unlock()
			t.Add(ok, err)
		})
	}
	close(start)
	wg.Wait()
	return t
}

// Verdict is the yardstick of every step: the balance must be what the
// accepted spends leave, and never below zero.
type Verdict struct {
	Tally
	Balance  int64
	Expected int64 // initial - amount*accepted
	Lowest   int64 // the same if every unknown spend landed too
	OK       bool
}

// Check judges balance after the spends t counted, of amount each, from
// initial. A spend of unknown outcome may or may not have landed, so with
// U of them the balance is right when it is what the accepted spends and
// any 0 to U of the unknown ones leave.
func Check(initial, amount int64, t Tally, balance int64) Verdict {
	v := Verdict{Tally: t, Balance: balance}
	v.Expected = initial - amount*int64(t.Accepted)
	v.Lowest = v.Expected - amount*int64(t.Unknown)
	gap := v.Expected - balance
	v.OK = balance >= 0 && gap >= 0 && balance >= v.Lowest && (amount == 0 || gap%amount == 0)
	return v
}

// String is the check line: "accepted=10 balance=0 expected=0 OK". With
// unknown outcomes it counts them and gives the range they allow:
// "accepted=8 unknown=2 balance=10 expected=0..20 OK".
func (v Verdict) String() string {
	word := "BROKEN"
	if v.OK {
		word = "OK"
	}
	if v.Unknown == 0 {
		return fmt.Sprintf("accepted=%d balance=%d expected=%d %s", v.Accepted, v.Balance, v.Expected, word)
	}
	return fmt.Sprintf("accepted=%d unknown=%d balance=%d expected=%d..%d %s", v.Accepted, v.Unknown, v.Balance, v.Lowest, v.Expected, word)
}
