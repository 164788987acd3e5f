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
	"hash/fnv"
	"math"
	"math/big"
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

// IDBlock is how many wallet ids a run owns (FirstIDFor): the most
// wallets a run may spend from.
const IDBlock = 1_000_000

// FirstIDFor is the first wallet id of a run on prefix: one of nine million
// blocks of IDBlock ids, from 10^12 up, chosen by a hash of the prefix.
// Two prefixes get the same block once in nine million pairs, and even
// then the second run is refused, not mixed up (the load test's Config.FirstID). The
// blocks stay clear of the demo wallet (42) and of the ids the workshop
// chooses (2x10^9 up).
func FirstIDFor(prefix string) int64 {
	const base, blocks = 1_000_000_000_000, 9_000_000
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return base + int64(h.Sum64()%blocks)*IDBlock
}

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
// amount, then waits for work (the time a real payment would spend deciding
// before it commits) and writes the new balance back.
//
// The wait honours ctx: when ctx ends during the work, Spend writes nothing
// and returns an error that matches ctx.Err() and, when the context was
// cancelled with a cause (as a lock's watchdog does), that cause too.
func Spend(ctx context.Context, rdb redis.Cmdable, key string, amount int64, work time.Duration) (bool, error) {
	rdb = observed(ctx, rdb) // a history recording this spend sees the GET (reads.go)
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
		return false, WriteError(key, err)
	}
	return true, nil
}

// WriteError wraps the error of a write that was sent. A reply from the
// server (a redis.Error such as READONLY or WRONGTYPE) says the write did
// not happen; anything else (a timeout, a dropped connection, a context that
// ended while the command was in flight) leaves its outcome unknown, and the
// error then matches ErrUnknownOutcome too.
func WriteError(key string, err error) error {
	var reply redis.Error
	if errors.As(err, &reply) {
		return fmt.Errorf("wallet: write %s: %w", key, err)
	}
	return fmt.Errorf("wallet: write %s: %w: %w", key, ErrUnknownOutcome, err)
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
	ReadSeen(ctx, bal)
	return bal, nil
}

// ErrUnknownOutcome marks a spend whose write was sent but whose reply never
// came (a timeout, a dropped connection, a context that ended while the
// command was in flight). The write may have landed or not: a client cannot
// tell a slow success from a failure. Check counts such spends apart.
var ErrUnknownOutcome = errors.New("wallet: outcome unknown")

// Tally counts what a Hammer run's calls reported.
type Tally struct {
	Accepted int     // calls that returned true
	Refused  int     // calls that returned false and no error
	Unknown  int     // calls whose error matches ErrUnknownOutcome
	Errors   []error // every error, in no particular order, unknown ones included
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
				if errors.Is(err, ErrUnknownOutcome) {
					tally.Unknown++
				}
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
//
// When some spends have an unknown outcome, any number of them, from none to
// all, may have landed: the balance is then right when it equals what the
// accepted spends plus some of the unknown ones imply.
type Verdict struct {
	Accepted int
	Unknown  int   // spends whose outcome is unknown (see ErrUnknownOutcome)
	Landed   int   // how many unknown spends the balance says landed; -1 when it fits none
	Balance  int64 //
	Expected int64 // initial - amount*accepted: the balance if no unknown spend landed
	Lowest   int64 // initial - amount*(accepted+unknown): if every unknown spend landed
	OK       bool

	// The exact figures as text, also when they do not fit an int64.
	expected, lowest string
}

// Check compares the balance with initial minus amount for each accepted
// spend. It is CheckUnknown with no unknown outcomes.
func Check(initial, amount int64, accepted int, balance int64) Verdict {
	return CheckUnknown(initial, amount, accepted, 0, balance)
}

// CheckUnknown judges a balance when unknown spends may or may not have
// landed: the verdict is OK when balance = initial - amount*(accepted+k) for
// some k from 0 to unknown, and balance >= 0. Landed says which k.
//
// The arithmetic is exact: an expected balance that does not fit an int64
// can never equal one, so it is BROKEN, never a wrapped-around false OK.
func CheckUnknown(initial, amount int64, accepted, unknown int, balance int64) Verdict {
	num := func(v int64) *big.Int { return new(big.Int).SetInt64(v) }
	after := func(spends int) *big.Int { // initial - amount*spends
		d := new(big.Int).Mul(num(amount), num(int64(spends)))
		return d.Sub(num(initial), d)
	}
	hi, lo := after(accepted), after(accepted+unknown)
	v := Verdict{
		Accepted: accepted,
		Unknown:  unknown,
		Landed:   -1,
		Balance:  balance,
		Expected: clamp(hi),
		Lowest:   clamp(lo),
		expected: hi.String(),
		lowest:   lo.String(),
	}
	if balance < 0 {
		return v
	}
	// k = (hi - balance) / amount, when it divides evenly and 0 <= k <= unknown.
	gap := new(big.Int).Sub(hi, num(balance))
	switch {
	case amount == 0:
		if gap.Sign() == 0 {
			v.Landed = 0
		}
	default:
		k, rem := new(big.Int).QuoRem(gap, num(amount), new(big.Int))
		if rem.Sign() == 0 && k.Sign() >= 0 && k.Cmp(num(int64(unknown))) <= 0 {
			v.Landed = int(k.Int64())
		}
	}
	v.OK = v.Landed >= 0
	return v
}

func clamp(x *big.Int) int64 {
	switch {
	case x.IsInt64():
		return x.Int64()
	case x.Sign() < 0:
		return math.MinInt64
	default:
		return math.MaxInt64
	}
}

// String is the line every step prints: "accepted=10 balance=0 expected=0
// OK" or "... BROKEN". With unknown outcomes it names them and the range of
// balances they allow: "accepted=8 unknown=3 balance=10 expected=-10..20 OK".
func (v Verdict) String() string {
	word := "BROKEN"
	if v.OK {
		word = "OK"
	}
	exp, low := v.expected, v.lowest
	if exp == "" { // a Verdict built by hand, not by Check
		exp, low = strconv.FormatInt(v.Expected, 10), strconv.FormatInt(v.Lowest, 10)
	}
	if v.Unknown == 0 {
		return fmt.Sprintf("accepted=%d balance=%d expected=%s %s", v.Accepted, v.Balance, exp, word)
	}
	return fmt.Sprintf("accepted=%d unknown=%d balance=%d expected=%s..%s %s", v.Accepted, v.Unknown, v.Balance, low, exp, word)
}
