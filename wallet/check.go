package wallet

import (
	"errors"
	"fmt"
	"sync"
)

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
	var wg sync.WaitGroup
	var mu sync.Mutex // guards t
	var t Tally
	start := make(chan struct{})
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
