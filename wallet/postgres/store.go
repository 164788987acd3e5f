// Package postgres keeps the wallet in a PostgreSQL row instead (steps 5
// and 6), where the database itself can refuse a write: one with a stale
// fence, or one computed from a balance that has changed since it was read.
package postgres

import (
	"cmp"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/wallet"
)

// ErrStale is PostgreSQL refusing a claim or a write that comes too late:
// a newer fence has claimed the row, or another write has changed it,
// since the caller read it.
var ErrStale = errors.New("postgres: refused, the row has moved on since it was read")

//go:embed schema.sql
var schema string

// Store keeps wallets in the table walletlock_wallets, as rows of one
// owner: a run's name for itself. It resets and deletes only its own rows.
type Store struct {
	pool  *pgxpool.Pool
	owner string
}

// Open creates the table if it is missing and returns the Store of owner.
func Open(ctx context.Context, pool *pgxpool.Pool, owner string) (*Store, error) {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Two CREATE TABLE IF NOT EXISTS at once can both find no table
		// and collide; a lock for the transaction's length lines them up.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(7161120316432279659)"); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, schema)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("postgres: create table walletlock_wallets: %w", err)
	}
	return &Store{pool: pool, owner: owner}, nil
}

// Reset sets wallet id to balance, with no fence and version 0, unless the
// row belongs to another owner.
func (s *Store) Reset(ctx context.Context, id, balance int64) error {
	tag, err := s.pool.Exec(ctx, `INSERT INTO walletlock_wallets (id, balance, owner) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET balance = $2, fence = 0, version = 0 WHERE walletlock_wallets.owner = $3`,
		id, balance, s.owner)
	if err == nil && tag.RowsAffected() == 0 {
		err = errors.New("it belongs to another run; pass another -prefix")
	}
	if err != nil {
		return fmt.Errorf("postgres: reset wallet %d: %w", id, err)
	}
	return nil
}

// Clear deletes every row of the Store's owner.
func (s *Store) Clear(ctx context.Context) error {
	_, err := s.pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE owner = $1", s.owner)
	return err
}

// Balance reads wallet id's balance, with no claim: anyone may write next.
func (s *Store) Balance(ctx context.Context, id int64) (int64, error) {
	var bal int64
	err := s.pool.QueryRow(ctx, "SELECT balance FROM walletlock_wallets WHERE id = $1", id).Scan(&bal)
	return bal, err
}

// Write stores balance whatever happened since it was read: no check.
func (s *Store) Write(ctx context.Context, id, balance int64) error {
	return s.write(ctx, "UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1", id, balance)
}

// Claim reads the balance and stamps the row with fence, unless a fence as
// high has claimed it already (ErrStale). From then on only this
// fence's WriteFenced lands: a holder that read before this claim, even
// with a fence of its own, finds the row gone to a newer fence.
func (s *Store) Claim(ctx context.Context, id, fence int64) (int64, error) {
	var bal int64
	err := s.pool.QueryRow(ctx, "UPDATE walletlock_wallets SET fence = $2 WHERE id = $1 AND fence < $2 RETURNING balance", id, fence).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("%w: wallet %d, fence %d", ErrStale, id, fence)
	}
	return bal, err
}

// WriteFenced stores balance only while the row carries fence, the one
// that claimed it when the balance was read.
func (s *Store) WriteFenced(ctx context.Context, id, fence, balance int64) error {
	return s.write(ctx, "UPDATE walletlock_wallets SET balance = $3, version = version + 1 WHERE id = $1 AND fence = $2", id, fence, balance)
}

// WriteFencedOnly is the fence checked at the write alone, a mistake kept
// for step 5 to show: it lands when fence is above the row's and raises the
// row to it, whatever was written since the caller read: two holders that
// read the same balance both land, the later fence last (phase 1b).
func (s *Store) WriteFencedOnly(ctx context.Context, id, fence, balance int64) error {
	return s.write(ctx, "UPDATE walletlock_wallets SET balance = $3, fence = $2, version = version + 1 WHERE id = $1 AND fence < $2", id, fence, balance)
}

// SpendVersioned spends with no lock at all: it reads the balance and its
// version, works, and writes only if the version is still the one it read;
// when another spend wrote first, it reads again and starts over.
func (s *Store) SpendVersioned(ctx context.Context, id, amount int64, work time.Duration) (bool, error) {
	for {
		var bal, version int64
		err := s.pool.QueryRow(ctx, "SELECT balance, version FROM walletlock_wallets WHERE id = $1", id).Scan(&bal, &version)
		if err != nil || bal < amount {
			return false, err
		}
		if err := wallet.Work(ctx, work); err != nil {
			return false, err
		}
		err = s.write(ctx, "UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1 AND version = $3", id, bal-amount, version)
		if !errors.Is(err, ErrStale) {
			return err == nil, err
		}
	}
}

// write runs a statement that changes one row; none changed is ErrStale.
func (s *Store) write(ctx context.Context, sql string, args ...any) error {
	tag, err := s.pool.Exec(ctx, sql, args...)
	if err != nil {
		return WriteError(err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%w: wallet %d", ErrStale, args[0])
	}
	return nil
}

// WriteError classifies a failed write: refused (an ERROR reply, or a
// failure before sending), or of unknown outcome (wallet.ErrUnknownOutcome).
func WriteError(err error) error {
	pg, refused := errors.AsType[*pgconn.PgError](err)
	if refused { // a FATAL reply ends the session, and may come after the commit
		refused = !slices.Contains([]string{"FATAL", "PANIC"}, cmp.Or(pg.SeverityUnlocalized, pg.Severity))
	}
	if refused || pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxCommitRollback) {
		return fmt.Errorf("postgres: write: %w", err)
	}
	return fmt.Errorf("postgres: write: %w: %w", wallet.ErrUnknownOutcome, err)
}
