package history

import (
	"fmt"
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

// Verdict is what Check found, and why.
type Verdict struct {
	Linearizable Answer
	Why          string        // for No, the wallet and what it did; for Unsure, what stopped the check
	Wallet       int64         // for No, the first wallet whose history no order explains
	Ops          int           // operations checked (failed ones left out)
	Took         time.Duration // the checker's time
}

// String is the verdict's word: "yes", "no" or "unknown".
func (v Verdict) String() string { return string(v.Linearizable) }

// Limits bound the search: linearizability is NP-hard, and a check that
// does not finish within them is Unsure, never Yes.
type Limits struct {
	Ops       int           // the most operations a history may have
	WalletOps int           // the most one wallet may have (the search's memory grows with its square)
	Timeout   time.Duration // for the whole check
}

// DefaultLimits check a default step 6 phase (some 90,000 spends over 16
// wallets) within seconds.
var DefaultLimits = Limits{Ops: 400_000, WalletOps: 20_000, Timeout: 10 * time.Second}

// Check checks the log's history. A log that is missing operations (it
// was full, or a spender process sent none) has holes: its verdict is
// Unsure.
func (l *Log) Check(lim Limits) Verdict {
	if d := l.Dropped(); d > 0 {
		return Verdict{Linearizable: Unsure, Ops: l.Len(),
			Why: fmt.Sprintf("the history has holes: it kept %d operations and is missing %d", l.Len(), d)}
	}
	return Check(l.Ops(), lim)
}

// Check checks ops for linearizability against Model, wallet by wallet,
// within lim. It answers No as soon as one wallet's history has no
// linearization, whatever the others give; Unsure when a wallet was too
// long to check or time ran out; Yes only when every wallet checked Ok.
func Check(ops []Op, lim Limits) (v Verdict) {
	start := time.Now()
	v = Verdict{Linearizable: Yes}
	for _, op := range ops {
		if op.Result != Failed {
			v.Ops++
		}
	}
	defer func() { v.Took = time.Since(start) }()
	if lim.Ops > 0 && v.Ops > lim.Ops {
		v.Linearizable, v.Why = Unsure, fmt.Sprintf("%d operations, more than the checker takes (%d)", v.Ops, lim.Ops)
		return v
	}
	parts := byWallet(ops)
	wallets := slices.Sorted(func(yield func(int64) bool) {
		for w := range parts {
			if !yield(w) {
				return
			}
		}
	})
	deadline := start.Add(lim.Timeout)
	for i, w := range wallets {
		part := operations(parts[w])
		if lim.WalletOps > 0 && len(part) > lim.WalletOps {
			v.Linearizable, v.Why = Unsure, fmt.Sprintf("wallet %d has %d operations, more than the checker takes for one (%d)", w, len(part), lim.WalletOps)
			continue // another wallet may still be a No
		}
		left := time.Until(deadline)
		if lim.Timeout > 0 && left <= 0 {
			v.Linearizable, v.Why = Unsure, fmt.Sprintf("out of time after %s, %d of %d wallets checked", lim.Timeout, i, len(wallets))
			return v
		}
		if lim.Timeout <= 0 {
			left = 0 // porcupine: no timeout
		}
		switch porcupine.CheckOperationsTimeout(Model, part, left) {
		case porcupine.Illegal:
			v.Linearizable, v.Wallet = No, w
			v.Why = fmt.Sprintf("wallet %d: no order of its %d operations explains what they returned", w, len(part))
			return v
		case porcupine.Unknown:
			v.Linearizable, v.Why = Unsure, fmt.Sprintf("out of time after %s, %d of %d wallets checked", lim.Timeout, i, len(wallets))
			return v
		}
	}
	return v
}
