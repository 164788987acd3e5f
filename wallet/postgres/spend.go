package postgres

// Step 6's spends, each a whole spend in one call. SpendVersioned, step
// 5's phase 3, is in store.go.

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"example.com/walletlock/wallet"
)

// SpendFenced is a spend by the holder of fence: Claim, then the work,
// then WriteFenced.
func (s *Store) SpendFenced(ctx context.Context, id, fence, amount int64, work time.Duration) (bool, error) {
	bal, err := s.Claim(ctx, id, fence)
	if err != nil || bal < amount {
		return false, err
	}
	if err := wallet.Work(ctx, work); err != nil {
		return false, err
	}
	return true, s.WriteFenced(ctx, id, fence, bal-amount)
}

// SpendForUpdate spends under PostgreSQL's own row lock: SELECT ... FOR
// UPDATE holds the row from the read to the commit.
func (s *Store) SpendForUpdate(ctx context.Context, id, amount int64, work time.Duration) (ok bool, err error) {
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var bal int64
		if err := tx.QueryRow(ctx, "SELECT balance FROM walletlock_wallets WHERE id = $1 FOR UPDATE", id).Scan(&bal); err != nil || bal < amount {
			return err
		}
		if err := wallet.Work(ctx, work); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1", id, bal-amount)
		ok = err == nil
		return err
	})
	if ok && err != nil { // the COMMIT was sent: it may have landed
		return false, WriteError(err)
	}
	return ok, err
}
