package loadtest

import (
	"context"
	_ "embed"
	"fmt"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// The atomic strategy: "you may not need a lock". When the balance lives
// in Redis and nothing else takes part in the spend, one script checks and
// takes in a single step (atomic_spend.lua).

//go:embed atomic_spend.lua
var atomicSpendLua string

var atomicSpendScript = redis.NewScript(atomicSpendLua)

// spendAtomic does the work first, then runs the script: the work cannot
// see the balance it is about to change, so what must hold at the moment
// of the write goes into the script.
func spendAtomic(r *runner, c call) outcome {
	if err := wallet.Work(c.ctx, r.cfg.Work); err != nil {
		return outcome{err: err, attempts: 1}
	}
	ok, err := atomicSpend(c.ctx, r.rdb, ledger.BalanceKey(r.cfg.Prefix, c.id), r.cfg.Amount)
	return outcome{ok: ok, err: err, attempts: 1}
}

// atomicSpend takes amount from the balance at key if it covers it. It
// reports false, nil when it does not; an error matching
// ledger.ErrNoWallet when there is no balance; and one matching
// wallet.ErrUnknownOutcome when the script was sent and no reply came.
func atomicSpend(ctx context.Context, rdb redis.Scripter, key string, amount int64) (bool, error) {
	n, err := atomicSpendScript.Run(ctx, rdb, []string{key}, amount).Int()
	switch {
	case err != nil:
		return false, wallet.WriteError(key, err)
	case n == -1:
		return false, fmt.Errorf("%w at %s", ledger.ErrNoWallet, key)
	}
	return n == 1, nil
}
