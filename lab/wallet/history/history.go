// Package history records what every spend did and checks the record for
// linearizability, the way Jepsen and etcd's robustness tests judge a
// system: not by one invariant at the end, but by asking whether some
// order of the operations, each taking effect at one instant between its
// call and its return, explains every result they returned.
//
// The balance check (wallet.Check) sees a lost update. It cannot see a
// spend refused for lack of funds while the money was there (a refusal
// computed from a stale read), because a refusal changes no balance. The
// history sees both: each spend records the balance it read, and a read
// that no order explains makes the history not linearizable.
//
//	log := history.NewLog(history.DefaultCap)
//	call := history.Now()
//	ok, err := wallet.Spend(ctx, rdb, key, amount, work)
//	log.Add(history.Op{Wallet: id, Call: call, Return: history.Now(), Amount: amount, Read: read, Result: history.Outcome(ok, err)})
//	v := log.Check(history.DefaultLimits) // yes, no or unknown
//
// The checker is github.com/anishathalye/porcupine; Model is the wallet
// as it specifies it, and WritePage draws a history on porcupine's page.
package history

import (
	"errors"
	"math"
	"sync"
	"time"

	"example.com/walletlock/lab/wallet"
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
// started, plus the monotonic time since. Every operation of a history
// is timed on it, so that calls and returns compare, also between
// processes on one machine (the -procs copies, the drill's spenders),
// while a step of the wall clock during a run moves nothing.
func Now() int64 { return epoch.UnixNano() + int64(time.Since(epoch)) }

// At is t on the clock of Now; t must come from time.Now in this process.
func At(t time.Time) int64 { return epoch.UnixNano() + int64(t.Sub(epoch)) }

// Outcome sorts what a spend returned into a Result: an error matching
// wallet.ErrUnknownOutcome is Unknown, wallet.ErrStaleFence RefusedStale,
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
	case errors.Is(err, wallet.ErrStaleFence):
		return RefusedStale
	default:
		return Failed
	}
}

// DefaultCap is the most operations a Log keeps unless told otherwise:
// 56 bytes each, 28 MB at most, more than a default step 6 phase makes.
const DefaultCap = 500_000

// chunk is how many operations a Log allocates at a time: it grows
// without copying what it holds.
const chunk = 8192

// Log is a history being recorded. It is safe for concurrent use; Add
// costs a mutex and a copy of 56 bytes. It keeps at most its cap of
// operations and counts those it had to drop: a history with holes can
// prove nothing, so its Check is unknown.
type Log struct {
	mu      sync.Mutex
	chunks  [][]Op
	n, max  int
	dropped int
}

// NewLog returns a Log that keeps at most max operations (DefaultCap when
// max <= 0).
func NewLog(max int) *Log {
	if max <= 0 {
		max = DefaultCap
	}
	return &Log{max: max}
}

// Add records op.
func (l *Log) Add(op Op) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n >= l.max {
		l.dropped++
		return
	}
	last := len(l.chunks) - 1
	if last < 0 || len(l.chunks[last]) == cap(l.chunks[last]) {
		l.chunks = append(l.chunks, make([]Op, 0, min(chunk, l.max-l.n)))
		last++
	}
	l.chunks[last] = append(l.chunks[last], op)
	l.n++
}

// Ops returns a copy of the operations kept, in the order they were added.
func (l *Log) Ops() []Op {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Op, 0, l.n)
	for _, c := range l.chunks {
		out = append(out, c...)
	}
	return out
}

// Len is how many operations the log kept.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Lose counts n operations that happened but never reached the log (a
// spender process that ended without sending its own): the history has
// holes, as when the log is full, and its Check is unknown.
func (l *Log) Lose(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.dropped += n
}

// Dropped is how many operations the log is missing: those Add refused
// because the log was full, and those Lose counted.
func (l *Log) Dropped() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dropped
}

// Cap is the most operations the log keeps.
func (l *Log) Cap() int { return l.max }
