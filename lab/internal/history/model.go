package history

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// state is the wallet in the model: its balance, and how many operations
// the order being tried has taken so far, which a bounded check reports
// (porcupine caches states by the set of operations taken, which fixes
// the count).
type state struct {
	balance int64
	known   bool // false: any balance (before its Set, or at the start of a window cut from a longer history); the first read pins it
	ordered int32
}

// Model is the wallet as porcupine checks it, one partition per wallet.
// The state is the balance:
//
//   - a spend of A from balance B is accepted only when B >= A, and the
//     balance becomes B - A;
//   - it is refused for funds only when B < A;
//   - a spend that read R (Op.Read) read the balance: B == R;
//   - a spend refused as stale changes nothing;
//   - an unknown outcome may have landed or not: both balances follow
//     (a nondeterministic step), and Check leaves its return open (the end
//     of the history), as etcd's robustness tests do;
//   - a Read returns the balance, a Set replaces it.
//
// Each porcupine.Operation's Input and Output are the Op. Model has no
// bound: Check and WritePage search with a bounded copy of it.
var Model = model(nil)

// model is Model, with every step taken through b (nil: no bound): once b
// has stopped, no step succeeds, and porcupine's search unwinds at once.
func model(b *budget) porcupine.Model {
	m := (&porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []any { return []any{state{}} },
		Step:      step,
		Hash: func(s any) uint64 {
			st := s.(state)
			if !st.known {
				return 0
			}
			return uint64(st.balance) * 0x9e3779b97f4a7c15
		},
		DescribeOperation: func(in, _ any) string { return describe(in.(Op)) },
		DescribeState: func(s any) string {
			if st := s.(state); st.known {
				return fmt.Sprint(st.balance)
			}
			return "any"
		},
		DescribeOperationMetadata: func(m any) string {
			if m == nil {
				return ""
			}
			return fmt.Sprint(m)
		},
	}).ToModel()
	if b == nil {
		return m
	}
	inner := m.StepContext
	m.Step = nil
	m.StepContext = func(ctx context.Context, s, in, out any) (bool, any) {
		if !b.step() {
			return false, nil
		}
		ok, next := inner(ctx, s, in, out)
		if ok {
			states := next.([]any)
			b.took(states[0].(state).ordered, len(states))
		}
		return ok, next
	}
	return m
}

func step(s, in, _ any) []any {
	st, op := s.(state), in.(Op)
	next := func(balances ...int64) []any {
		out := make([]any, len(balances))
		for i, b := range balances {
			out[i] = state{balance: b, known: true, ordered: st.ordered + 1}
		}
		return out
	}
	if op.Result == Set {
		return next(op.Read)
	}
	b := st.balance
	if !st.known { // a balance read pins it; without one, still any balance
		if op.Result == Unknown || op.Read == NoRead {
			return []any{state{ordered: st.ordered + 1}}
		}
		b = op.Read
	}
	if op.Result != Unknown && op.Read != NoRead && op.Read != b {
		return nil // it read a balance the wallet did not hold then
	}
	switch op.Result {
	case Accepted:
		if b >= op.Amount {
			return next(b - op.Amount)
		}
	case RefusedFunds:
		if b < op.Amount {
			return next(b)
		}
	case Unknown:
		if b >= op.Amount {
			return next(b, b-op.Amount)
		}
		return next(b)
	case Read, RefusedStale, Failed:
		return next(b)
	}
	return nil
}

func describe(op Op) string {
	switch op.Result {
	case Set:
		return fmt.Sprintf("set %d", op.Read)
	case Read:
		return fmt.Sprintf("read → %d", op.Read)
	}
	read := ""
	if op.Read != NoRead && op.Result != Unknown {
		read = fmt.Sprintf(", read %d", op.Read)
	}
	return fmt.Sprintf("spend %d%s → %s", op.Amount, read, op.Result)
}

// partition groups a history by wallet (Op.Wallet), in the order of the
// wallets' first operations.
func partition(h []porcupine.Operation) [][]porcupine.Operation {
	at := map[int64]int{}
	var out [][]porcupine.Operation
	for _, o := range h {
		w := o.Input.(Op).Wallet
		i, ok := at[w]
		if !ok {
			i = len(out)
			at[w] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], o)
	}
	return out
}

// operations turns ops into porcupine's, leaving out the failed ones and
// leaving the return of an unknown outcome open: the end of the history.
func operations(ops []Op) []porcupine.Operation {
	end := int64(0)
	for _, op := range ops {
		end = max(end, op.Return, op.Call)
	}
	out := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		if op.Result == Failed {
			continue
		}
		ret := op.Return
		if op.Result == Unknown {
			ret = end + 1
		}
		var v any = op // one copy for Input and Output
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: v, Output: v, Call: op.Call, Return: ret})
	}
	return out
}

// byWallet splits ops by wallet, each part sorted by call.
func byWallet(ops []Op) map[int64][]Op {
	parts := map[int64][]Op{}
	for _, op := range ops {
		parts[op.Wallet] = append(parts[op.Wallet], op)
	}
	for _, p := range parts {
		slices.SortStableFunc(p, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
	}
	return parts
}
