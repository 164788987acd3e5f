package history

import (
	"fmt"
	"slices"

	"github.com/anishathalye/porcupine"
)

// unset is the state of a wallet before its Set, or at the start of a
// window cut from the middle of a history (see WritePage): any balance.
// The first operation that read one pins it.
type unset struct{}

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
// Each porcupine.Operation's Input and Output are the Op.
var Model = (&porcupine.NondeterministicModel{
	Partition: partition,
	Init:      func() []any { return []any{unset{}} },
	Step:      step,
	Hash: func(s any) uint64 {
		if b, ok := s.(int64); ok {
			return uint64(b) * 0x9e3779b97f4a7c15
		}
		return 0
	},
	DescribeOperation: func(in, _ any) string { return describe(in.(Op)) },
	DescribeState: func(s any) string {
		if b, ok := s.(int64); ok {
			return fmt.Sprint(b)
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

func step(state, in, _ any) []any {
	op := in.(Op)
	b, known := state.(int64)
	if op.Result == Set {
		return []any{op.Read}
	}
	if !known { // a balance read pins it; without one, still any balance
		if op.Result == Unknown || op.Read == NoRead {
			return []any{unset{}}
		}
		b = op.Read
	}
	if op.Result != Unknown && op.Read != NoRead && op.Read != b {
		return nil // it read a balance the wallet did not hold then
	}
	switch op.Result {
	case Accepted:
		if b >= op.Amount {
			return []any{b - op.Amount}
		}
	case RefusedFunds:
		if b < op.Amount {
			return []any{b}
		}
	case Unknown:
		if b >= op.Amount {
			return []any{b, b - op.Amount}
		}
		return []any{b}
	case Read, RefusedStale, Failed:
		return []any{b}
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
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op, Output: op, Call: op.Call, Return: ret})
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
		slices.SortStableFunc(p, func(a, b Op) int { return cmpInt(a.Call, b.Call) })
	}
	return parts
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
