package judge

import (
	"context"
	"fmt"

	"example.com/walletlock/lab/internal/history"
)

// spendOp is one spend of a check as the lab's history checker takes it:
// its read and its write, and how the write ended.
func spendOp(client int, read, written dbOp) history.Op {
	res := history.Accepted
	switch {
	case read.err != nil:
		res = history.Failed
	case written.err == nil && written.call > 0:
	case written.stale:
		res = history.RefusedStale
	default:
		res = history.Failed
	}
	return history.Op{Wallet: 1, Client: client, Call: read.call, Return: max(written.ret, read.ret), Amount: 10, Read: read.balance, Result: res}
}

// linearizable checks a check's spends, between the wallet's set-up at
// set and the read-back of balance, and says so in a clause; the first
// time a run says the word, the clause says what it means.
func (c *check) linearizable(set, readBack int64, initial, balance int64, spends ...history.Op) string {
	ops := []history.Op{{Wallet: 1, Call: set, Return: set, Read: initial, Result: history.Set}}
	ops = append(ops, spends...)
	ops = append(ops, history.Op{Wallet: 1, Client: -1, Call: readBack, Return: readBack, Read: balance, Result: history.Read})
	v := history.Check(context.Background(), ops, history.DefaultLimits) // bounded by the limits; a few ops
	gloss := c.r.gloss("linearizable", " (linearizable: the spends can be put in an order, one at a time, each within its own start and end, that explains every balance read)")
	switch v.Linearizable {
	case history.Yes:
		return "; its history is linearizable" + gloss
	case history.No:
		return "; its history is not linearizable" + gloss + ": no such order explains the balance"
	}
	return fmt.Sprintf("; whether its history is linearizable is unknown (%s)", v.Why)
}
