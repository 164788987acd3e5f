// Package wallet is the thing the locks protect: a balance in Redis that is
// read, checked and written back (a read-modify-write), plus the yardstick
// every step prints, Check.
//
// Spend is deliberately naive. It is correct only while the caller holds
// something that keeps every other spender out of the same wallet between
// the read and the write; the steps of this repo are about what that
// something can be.
package wallet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultPrefix is where the demo programs keep their keys. Every key the
// repo writes starts with a prefix, so nothing ever touches other data in a
// shared Redis; tests use prefixes of their own.
const DefaultPrefix = "walletlock:demo:"

// DemoWallet is the wallet the step programs spend from, as in the article.
const DemoWallet = 42

// ErrNoWallet is returned by Spend when the balance key does not exist.
var ErrNoWallet = errors.New("wallet: no balance stored")

// BalanceKey returns the Redis key that holds the balance of wallet id, for
// example "walletlock:demo:balance:{wallet:42}". The braces are a Redis
// Cluster hash tag: LockKey and the fence counter share it, so a wallet's
// keys live in one slot.
func BalanceKey(prefix string, id int64) string {
	return prefix + "balance:{wallet:" + strconv.FormatInt(id, 10) + "}"
}

// LockKey returns the key of the lock that guards wallet id, for example
// "walletlock:demo:lock:{wallet:42}".
func LockKey(prefix string, id int64) string {
	return prefix + "lock:{wallet:" + strconv.FormatInt(id, 10) + "}"
}

// Spend reads the balance at key, refuses (false, nil) when it is below
// amount, waits for work (standing in for a fraud check or a call to another
// service) and writes the new balance back.
//
// The wait honours ctx: when ctx ends during the work, Spend writes nothing
// and returns an error that matches ctx.Err() and, when the context was
// cancelled with a cause (as a lock's watchdog does), that cause too.
func Spend(ctx context.Context, rdb redis.Cmdable, key string, amount int64, work time.Duration) (bool, error) {
	bal, err := rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return false, fmt.Errorf("%w at %s", ErrNoWallet, key)
	}
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
		return false, fmt.Errorf("wallet: write %s: %w", key, err)
	}
	return true, nil
}

// Work waits for d, or until ctx ends. It returns nil when the work is done
// and ctx is still live, otherwise an error matching ctx.Err() and the
// context's cause.
func Work(ctx context.Context, d time.Duration) error {
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
	// Checked after the wait too: when the timer and the cancellation race,
	// select picks either, and a cancelled spend must not write.
	if ctx.Err() != nil {
		return aborted(ctx)
	}
	return nil
}

func aborted(ctx context.Context) error {
	if cause := context.Cause(ctx); cause != nil && cause != ctx.Err() {
		return fmt.Errorf("wallet: spend aborted before the write: %w (%w)", ctx.Err(), cause)
	}
	return fmt.Errorf("wallet: spend aborted before the write: %w", ctx.Err())
}

// Set stores a balance, replacing whatever was there: the starting point of
// every run.
func Set(ctx context.Context, rdb redis.Cmdable, key string, balance int64) error {
	if err := rdb.Set(ctx, key, balance, 0).Err(); err != nil {
		return fmt.Errorf("wallet: set %s: %w", key, err)
	}
	return nil
}

// Balance reads a balance.
func Balance(ctx context.Context, rdb redis.Cmdable, key string) (int64, error) {
	bal, err := rdb.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, fmt.Errorf("%w at %s", ErrNoWallet, key)
	}
	if err != nil {
		return 0, fmt.Errorf("wallet: read %s: %w", key, err)
	}
	return bal, nil
}

// Tally counts what a Hammer run's calls reported.
type Tally struct {
	Accepted int     // calls that returned true
	Refused  int     // calls that returned false and no error
	Errors   []error // every error, in no particular order
}

// Hammer runs fn in n goroutines that all start at the same moment (they
// wait on one channel, closed once every goroutine exists), waits for them
// and counts what they report. fn gets the goroutine's number, 0 to n-1.
func Hammer(n int, fn func(i int) (bool, error)) Tally {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		tally Tally
		start = make(chan struct{})
	)
	for i := range n {
		wg.Go(func() {
			<-start
			ok, err := fn(i)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				tally.Errors = append(tally.Errors, err)
			case ok:
				tally.Accepted++
			default:
				tally.Refused++
			}
		})
	}
	close(start)
	wg.Wait()
	return tally
}

// Verdict is the invariant every step checks: the final balance must equal
// what the accepted spends imply, and must never go below zero.
type Verdict struct {
	Accepted int
	Balance  int64
	Expected int64
	OK       bool
}

// Check compares the balance with initial minus amount for each accepted
// spend.
func Check(initial, amount int64, accepted int, balance int64) Verdict {
	want := initial - amount*int64(accepted)
	return Verdict{
		Accepted: accepted,
		Balance:  balance,
		Expected: want,
		OK:       balance == want && balance >= 0,
	}
}

// String is the line every step prints:
// "accepted=10 balance=0 expected=0 OK" or "... BROKEN".
func (v Verdict) String() string {
	word := "BROKEN"
	if v.OK {
		word = "OK"
	}
	return fmt.Sprintf("accepted=%d balance=%d expected=%d %s", v.Accepted, v.Balance, v.Expected, word)
}
