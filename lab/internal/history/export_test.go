package history

import (
	"context"
	"sync/atomic"

	"example.com/walletlock/lab/internal/ledger"
)

// Spend, for the tests, runs one spend of amount from wallet id by client
// and records it, with the balance it read (ledger.ObserveReads).
func (r *Recorder) Spend(ctx context.Context, id int64, client int, amount int64, spend func(ctx context.Context) (bool, error)) (bool, error) {
	if r == nil {
		return spend(ctx)
	}
	var read atomic.Int64
	read.Store(NoRead)
	ctx = ledger.ObserveReads(ctx, func(b int64) { read.Store(b) })
	call := Now()
	ok, err := spend(ctx)
	r.Add(Op{Wallet: id, Client: client, Call: call, Return: Now(), Amount: amount, Read: read.Load(), Result: Outcome(ok, err)})
	return ok, err
}
