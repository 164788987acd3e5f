package judge

import (
	"context"
	"fmt"

	"example.com/walletlock/lab/internal/history"
)

// spendOp is one spend of a check as the lab's history recorder takes it
// (wallet/history): its call and return, the balance it read, and how it
// ended.
func spendOp(client int, read, written answer) history.Op {
	res := history.Accepted
	switch {
	case !read.OK:
		res = history.Failed
	case written.OK:
	case written.Stale:
		res = history.RefusedStale
	default:
		res = history.Failed
	}
	return history.Op{Wallet: 1, Client: client, Call: read.Call, Return: written.Ret, Amount: 10, Read: read.Balance, Result: res}
}

// linearizable checks a check's spends, between the wallet's set-up at
// set and the read-back of balance, with the lab's checker, and says so
// in a clause: "; the history is not linearizable".
func linearizable(set, readBack int64, initial, balance int64, spends ...history.Op) string {
	ops := []history.Op{{Wallet: 1, Call: set, Return: set, Read: initial, Result: history.Set}}
	ops = append(ops, spends...)
	ops = append(ops, history.Op{Wallet: 1, Client: -1, Call: readBack, Return: readBack, Read: balance, Result: history.Read})
	v := history.Check(context.Background(), ops, history.DefaultLimits) // bounded by the limits; a few ops
	switch v.Linearizable {
	case history.Yes:
		return "; its history is linearizable"
	case history.No:
		return "; its history is not linearizable: no order of the spends explains the balance"
	}
	return fmt.Sprintf("; whether its history is linearizable is unknown (%s)", v.Why)
}
