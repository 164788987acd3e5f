package history

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/anishathalye/porcupine"
)

// Answer is a history's verdict: Yes, No or Unsure.
type Answer string

const (
	Yes    Answer = "yes"     // some order of the operations explains every result
	No     Answer = "no"      // none does
	Unsure Answer = "unknown" // the check did not finish, or the history has holes: never a pass
)

// Verdict is what Check found, and why. Its JSON keys are the ones every
// program's phase or row carries beside its balance check.
type Verdict struct {
	Linearizable Answer  `json:"linearizable"`               // yes, no or unknown (never a pass)
	Why          string  `json:"linearizable_why,omitempty"` // for No, the wallet and what it did; for Unsure, what stopped the check
	Ops          int     `json:"history_ops"`                // spends recorded
	Dropped      int     `json:"history_dropped"`            // spends missing from the record (then unknown)
	Seconds      float64 `json:"history_check_seconds"`      // the checker's time
	Wallet       int64   `json:"-"`                          // for No, the first wallet whose history no order explains
}

// String is the verdict's word: "yes", "no" or "unknown".
func (v Verdict) String() string { return string(v.Linearizable) }

// Limits bound a check: linearizability is NP-hard, and porcupine's
// search can grow without end in time and in memory. A check that reaches
// a bound is Unsure, never Yes, and says which bound and how far it got.
// A zero field takes DefaultLimits' value.
type Limits struct {
	Ops       int           // the most spends a history may have
	WalletOps int           // the most operations one wallet may have (one search)
	Timeout   time.Duration // for the whole check
	Memory    int64         // bytes one search may hold, counted as it grows (an upper bound of what it keeps)
}

// DefaultLimits check a default load-test phase (some 90,000 spends over
// 16 wallets) within a second or two, and give up on a worse one within
// seconds and a hundred-odd MiB.
var DefaultLimits = Limits{Ops: 400_000, WalletOps: 20_000, Timeout: 5 * time.Second, Memory: 128 << 20}

// or is l with each zero field taken from d.
func (l Limits) or(d Limits) Limits {
	return Limits{cmp.Or(l.Ops, d.Ops), cmp.Or(l.WalletOps, d.WalletOps), cmp.Or(l.Timeout, d.Timeout), cmp.Or(l.Memory, d.Memory)}
}

// Check judges the recorder's history (Check), unless it has holes (it
// was full): then it is Unsure.
func (r *Recorder) Check(ctx context.Context, lim Limits) Verdict {
	if d := r.Dropped(); d > 0 {
		return Verdict{Linearizable: Unsure, Ops: r.Len(), Dropped: d,
			Why: fmt.Sprintf("the history has holes: it kept %d spends and is missing %d", r.Len(), d)}
	}
	return Check(ctx, r.Ops(), lim)
}

// Check checks ops for linearizability against Model, wallet by wallet,
// within lim, and stops when ctx ends. It answers No as soon as one
// wallet's history has no linearization; Unsure when a wallet was too long
// to check, a bound was reached or ctx ended; Yes only when every wallet
// checked Ok.
//
// Each wallet is first checked by arithmetic, which needs no search:
// fifty spends that all read 100 and all wrote 90 are a No at once, where
// porcupine would try every order of them to say so.
func Check(ctx context.Context, ops []Op, lim Limits) (v Verdict) {
	start := time.Now()
	lim = lim.or(DefaultLimits)
	v = Verdict{Linearizable: Yes}
	for _, op := range ops {
		if op.Result != Set && op.Result != Read {
			v.Ops++
		}
	}
	defer func() { v.Seconds = time.Since(start).Seconds() }()
	if v.Ops > lim.Ops {
		v.Linearizable, v.Why = Unsure, fmt.Sprintf("%d spends, more than the checker takes (%d)", v.Ops, lim.Ops)
		return v
	}
	parts := byWallet(ops)
	wallets := slices.Sorted(maps.Keys(parts))
	for _, w := range wallets {
		if why := arithmetic(parts[w]); why != "" {
			v.Linearizable, v.Wallet, v.Why = No, w, fmt.Sprintf("wallet %d: %s", w, why)
			return v
		}
	}
	searches, total := make([][]porcupine.Operation, len(wallets)), 0
	for i, w := range wallets {
		searches[i] = operations(parts[w]) // all but the failed ones
		total += len(searches[i])
	}
	b := newBudget(ctx, lim, start)
	for i, w := range wallets {
		part := searches[i]
		if len(part) > lim.WalletOps {
			v.Linearizable, v.Why = Unsure, fmt.Sprintf("wallet %d has %d operations, more than the checker takes for one (%d)", w, len(part), lim.WalletOps)
			b.done += len(part)
			continue // another wallet may still be a No
		}
		res, _ := b.search(part, false)
		if why := b.stopped(total); why != "" {
			v.Linearizable, v.Why = Unsure, why
			return v
		}
		if res == porcupine.Illegal {
			v.Linearizable, v.Wallet = No, w
			v.Why = fmt.Sprintf("wallet %d: no order of its %d operations explains what they returned", w, len(part))
			return v
		}
		b.done += len(part)
	}
	return v
}

// arithmetic checks one wallet's history (sorted by call), one Set, spends
// then a Read, by its balance alone: in every order the balance ends at
// the start less one amount per accepted spend and per unknown one that
// landed. It says why no order explains the Read, or "" when the sums
// leave it open. It only drops constraints of the model: what it refuses,
// the model refuses too.
func arithmetic(ops []Op) string {
	var set, read *Op
	var accepted, unknown, minUnknown, maxUnknown int64
	nUnknown, spends := 0, 0
	var lastReturn, firstCall int64
	for i := range ops {
		op := &ops[i]
		switch op.Result {
		case Set:
			if set != nil {
				return "" // two Sets: the sums start over
			}
			set = op
			continue
		case Read:
			if read == nil || op.Call > read.Call {
				read = op
			}
			continue
		case Failed:
			continue
		}
		if spends == 0 || op.Call < firstCall {
			firstCall = op.Call
		}
		spends++
		switch op.Result {
		case Accepted:
			accepted += op.Amount
		case Unknown:
			unknown += op.Amount
			if nUnknown == 0 || op.Amount < minUnknown {
				minUnknown = op.Amount
			}
			maxUnknown = max(maxUnknown, op.Amount)
			nUnknown++
			continue // its return is open: it may land after the Read
		}
		lastReturn = max(lastReturn, op.Return)
	}
	if set == nil || read == nil || (spends > 0 && set.Return > firstCall) || read.Call < lastReturn {
		return ""
	}
	// The Read saw the Set's balance less every accepted spend and some of
	// the unknown ones.
	landed := set.Read - accepted - read.Read
	switch {
	case nUnknown == 0 && landed != 0:
		return fmt.Sprintf("no order of its spends leaves the balance read back (%d): it started at %d and its accepted spends took %d",
			read.Read, set.Read, accepted)
	case landed < 0, landed > unknown, minUnknown > 0 && minUnknown == maxUnknown && landed%minUnknown != 0:
		return fmt.Sprintf("no order of its spends leaves the balance read back (%d): it started at %d, its accepted spends took %d, and its %d unknown outcomes at most %d",
			read.Read, set.Read, accepted, nUnknown, unknown)
	}
	return ""
}
