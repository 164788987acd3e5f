// Package history records what every spend did and checks the record for
// linearizability, the way Jepsen and etcd's robustness tests judge a
// system: not by one invariant at the end, but by asking whether some
// order of the operations, each taking effect at one instant between its
// call and its return, explains every result they returned.
//
// The balance check (wallet.Check) sees a lost update, not a spend refused
// for lack of funds while the money was there (a refusal computed from a
// stale read), which changes no balance. The history sees both: each
// spend records the balance it read.
//
// A Recorder is the one way a program records a history:
//
//	rec := history.NewRecorder(0)
//	rec.Set(id, 100) // the wallet's starting balance, just written
//	read, call := history.NoRead, history.Now()
//	ctx := ledger.ObserveReads(ctx, func(b int64) { read = b }) // the spend's reads tell it
//	ok, err := wallet.Spend(ctx, ledger.Observed(ctx, rdb), key, 10, work)
//	rec.Add(history.Op{Wallet: id, Client: worker, Call: call, Return: history.Now(),
//		Amount: 10, Read: read, Result: history.Outcome(ok, err)})
//	rec.Read(id, balance) // the balance read back at the end
//	v := rec.Check(ctx, history.DefaultLimits) // yes, no or unknown, and why
//
// Every check is bounded in time and in memory (Limits): past a bound its
// verdict is unknown, with the reason, never yes. The checker is
// github.com/anishathalye/porcupine; Model is the wallet as it specifies
// it.
package history

import (
	"errors"
	"math"
	"time"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// Result is how an operation ended.
type Result uint8

const (
	// Accepted: the spend wrote balance - amount.
	Accepted Result = iota + 1
	// RefusedFunds: the spend read a balance below its amount and wrote nothing.
	RefusedFunds
	// RefusedStale: the store refused the spend's write (a stale fence).
	RefusedStale
	// Failed: the spend surely did not write (a refused lock, a read that
	// failed, a write the server answered with an error). The checker
	// leaves it out.
	Failed
	// Unknown: the write was sent and no reply came. It may have landed
	// or not (wallet.ErrUnknownOutcome).
	Unknown
	// Read is not a spend: a read of the balance, which Op.Read holds
	// (the read-back at the end of a run).
	Read
	// Set is not a spend: the write of the starting balance, Op.Read.
	Set
)

var resultNames = [...]string{"", "accepted", "refused for funds", "refused as stale", "failed", "unknown outcome", "read", "set"}

func (r Result) String() string {
	if int(r) < len(resultNames) {
		return resultNames[r]
	}
	return "result?"
}

// NoRead is Op.Read of a spend whose read is not known: one that failed
// before it read, or whose read happens inside a script or an SQL
// statement. The model then checks only its result.
const NoRead int64 = math.MinInt64

// Op is one operation of a history. Call and Return are times on the
// clock of Now, taken before the call and after it returned.
type Op struct {
	Wallet       int64
	Client       int // who made it (a worker's number): a row of the page
	Call, Return int64
	Amount       int64
	Read         int64 // the balance the spend read (NoRead: not known); a Read's or Set's balance
	Result       Result
}

var epoch = time.Now()

// Now is the time in Unix nanoseconds: the wall clock when this process
// started, plus the monotonic time since, so that calls and returns
// compare between processes on one machine while a step of the wall
// clock during a run moves nothing.
func Now() int64 { return epoch.UnixNano() + int64(time.Since(epoch)) }

// At is t on the clock of Now; t must come from time.Now in this process.
func At(t time.Time) int64 { return epoch.UnixNano() + int64(t.Sub(epoch)) }

// Outcome sorts what a spend returned into a Result: an error matching
// wallet.ErrUnknownOutcome is Unknown, ledger.ErrStaleFence RefusedStale,
// any other error Failed; without one, Accepted when ok, else
// RefusedFunds. A spend that wrote and then failed to release its lock
// (ok with an error) is Accepted.
func Outcome(ok bool, err error) Result {
	switch {
	case ok:
		return Accepted
	case err == nil:
		return RefusedFunds
	case errors.Is(err, wallet.ErrUnknownOutcome):
		return Unknown
	case errors.Is(err, ledger.ErrStaleFence):
		return RefusedStale
	default:
		return Failed
	}
}
