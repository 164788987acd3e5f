package ledger

// The PostgreSQL side: the root's Store (wallet/postgres) for one run,
// with what the runs add: ranges of wallets set up, read and deleted in
// batches; a refusal that says which fence holds the row (for
// lock.RaiseFence); every read told to a history; and the versioned spend
// counting its conflicts.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

var (
	// ErrStaleFence means PostgreSQL refused a fenced claim or write because
	// a newer fence holds the wallet. The error is a *StaleFenceError.
	ErrStaleFence = errors.New("ledger: stale fence")
	// ErrBadFence means a fence below 1: fences come from a counter that
	// starts at 1, and 0 is what an unclaimed row holds.
	ErrBadFence = errors.New("ledger: fence must be at least 1")
	// ErrOwned means a wallet row belongs to another run (another owner):
	// the Store neither resets nor deletes it. The error is an
	// *OwnedError.
	ErrOwned = errors.New("ledger: owned by another run")
)

// OwnedError is the error of a reset that found a row of another run. It
// matches ErrOwned with errors.Is.
type OwnedError struct {
	ID    int64  // the first wallet in the range that another run owns
	Owner string // that run's owner name (a key prefix)
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("ledger: wallet %d in PostgreSQL belongs to the run with prefix %q: choose other wallet ids, or let that run end (it deletes its rows)", e.ID, e.Owner)
}

// Unwrap makes errors.Is(err, ErrOwned) true.
func (e *OwnedError) Unwrap() error { return ErrOwned }

// StaleFenceError is the error of a refused fenced claim or write. It
// matches ErrStaleFence with errors.Is. Highest is the fence PostgreSQL
// holds for the wallet, read right after the refusal: above every fence
// the lock has handed out, it says the lock's counter went backwards (see
// Heal).
type StaleFenceError struct {
	ID      int64 // the wallet
	Fence   int64 // the fence that was refused
	Highest int64 // the fence the row carries
}

func (e *StaleFenceError) Error() string {
	return fmt.Sprintf("ledger: stale fence: wallet %d refused fence %d, PostgreSQL holds fence %d", e.ID, e.Fence, e.Highest)
}

// Unwrap makes errors.Is(err, ErrStaleFence) true.
func (e *StaleFenceError) Unwrap() error { return ErrStaleFence }

// Store is the root's postgres.Store of one owner, a run's key prefix: it
// resets and deletes only the rows it owns, so two runs with different
// prefixes never share or delete each other's wallets. It is safe for
// concurrent use.
type Store struct {
	*postgres.Store
	pool  *pgxpool.Pool
	owner string
}

// Open creates the table if it is missing (postgres.Open: the one schema)
// and returns the Store of owner.
func Open(ctx context.Context, pool *pgxpool.Pool, owner string) (*Store, error) {
	if pool == nil {
		return nil, errors.New("ledger: Open needs a pool")
	}
	s, err := postgres.Open(ctx, pool, owner)
	if err != nil {
		return nil, err
	}
	return &Store{Store: s, pool: pool, owner: owner}, nil
}

// Balance reads the balance of wallet id, and tells a history that
// records the spend what it read (ObserveReads).
func (s *Store) Balance(ctx context.Context, id int64) (int64, error) {
	bal, err := s.Store.Balance(ctx, id)
	if err != nil {
		return 0, s.failed(ctx, "read", id, 0, err)
	}
	ReadSeen(ctx, bal)
	return bal, nil
}

// Fence reads the highest fence that has claimed wallet id (0 if none).
func (s *Store) Fence(ctx context.Context, id int64) (int64, error) {
	var fence int64
	err := s.pool.QueryRow(ctx, "SELECT fence FROM walletlock_wallets WHERE id = $1", id).Scan(&fence)
	if err != nil {
		return 0, s.failed(ctx, "read the fence of", id, 0, err)
	}
	return fence, nil
}

// Write is the root's Write, whose errors say which wallet is missing
// (ErrNoWallet), and match ctx's end and its cause when ctx ended.
func (s *Store) Write(ctx context.Context, id, balance int64) error {
	if err := ctx.Err(); err != nil {
		return s.failed(ctx, "write", id, 0, err) // nothing was sent
	}
	return s.failed(ctx, "write", id, 0, s.Store.Write(ctx, id, balance))
}

// Claim is the root's Claim (it reads the balance of wallet id and stamps
// the row with fence, unless the row has seen this fence or a higher one),
// and tells a history what it read. It returns ErrBadFence for a fence
// below 1, a *StaleFenceError, or ErrNoWallet; when ctx ends, the error
// matches ctx.Err() and the context's cause.
func (s *Store) Claim(ctx context.Context, id, fence int64) (int64, error) {
	if fence < 1 {
		return 0, fmt.Errorf("%w, got %d", ErrBadFence, fence)
	}
	bal, err := s.Store.Claim(ctx, id, fence)
	if err != nil {
		return 0, s.failed(ctx, "claim", id, fence, err)
	}
	ReadSeen(ctx, bal)
	return bal, nil
}

// WriteFenced is the root's WriteFenced, with Claim's errors, and one that
// matches wallet.ErrUnknownOutcome when the UPDATE was sent and its reply
// never came: it may have landed.
func (s *Store) WriteFenced(ctx context.Context, id, fence, balance int64) error {
	if fence < 1 {
		return fmt.Errorf("%w, got %d", ErrBadFence, fence)
	}
	if err := ctx.Err(); err != nil {
		return s.failed(ctx, "write", id, fence, err) // nothing was sent
	}
	return s.failed(ctx, "write", id, fence, s.Store.WriteFenced(ctx, id, fence, balance))
}

// SpendFenced is the root's spend by the holder of fence (Claim, the
// work, WriteFenced) through this Store's Claim and WriteFenced: a history
// learns what it read, and a refusal says which fence holds the row.
func (s *Store) SpendFenced(ctx context.Context, id, fence, amount int64, work time.Duration) (bool, error) {
	bal, err := s.Claim(ctx, id, fence)
	if err != nil || bal < amount {
		return false, err
	}
	if err := wallet.Work(ctx, work); err != nil {
		return false, withCause(ctx, err)
	}
	if err := s.WriteFenced(ctx, id, fence, bal-amount); err != nil {
		return false, err
	}
	return true, nil
}

// SpendForUpdate is the root's, whose errors say which wallet is missing
// and match ctx's end and its cause. Its read happens under the row's
// lock, so a history learns only its result.
func (s *Store) SpendForUpdate(ctx context.Context, id, amount int64, work time.Duration) (bool, error) {
	ok, err := s.Store.SpendForUpdate(ctx, id, amount, work)
	return ok, s.failed(ctx, "spend from", id, 0, err)
}

// SpendVersioned is the root's versioned spend (it writes only if the
// row's version is still the one it read, and reads again when another
// spend wrote first), written out here for what the runs measure: it
// returns how many conflicts it met, tells a history each read, and waits
// a random moment after a conflict, so that the losers of one round do not
// all read again at once. Every conflict means another spend succeeded.
func (s *Store) SpendVersioned(ctx context.Context, id, amount int64, work time.Duration) (ok bool, conflicts int, err error) {
	for {
		var bal, version int64
		err := s.pool.QueryRow(ctx, "SELECT balance, version FROM walletlock_wallets WHERE id = $1", id).Scan(&bal, &version)
		if err != nil {
			return false, conflicts, s.failed(ctx, "read", id, 0, err)
		}
		ReadSeen(ctx, bal)
		if bal < amount {
			return false, conflicts, nil
		}
		if err := wallet.Work(ctx, work); err != nil {
			return false, conflicts, withCause(ctx, err)
		}
		tag, err := s.pool.Exec(ctx, "UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1 AND version = $3", id, bal-amount, version)
		if err != nil {
			return false, conflicts, withCause(ctx, fmt.Errorf("ledger: write wallet %d: %w", id, postgres.WriteError(err)))
		}
		if tag.RowsAffected() == 1 {
			return true, conflicts, nil
		}
		conflicts++
		if err := wallet.Work(ctx, rand.N(2*time.Millisecond)); err != nil {
			return false, conflicts, withCause(ctx, err)
		}
	}
}

// failed names what failed of a call on wallet id with fence (0: none): a
// missing row is ErrNoWallet, a refused fence a *StaleFenceError; and,
// when ctx has ended, the error matches ctx.Err() and its cause too.
func (s *Store) failed(ctx context.Context, what string, id, fence int64, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pgx.ErrNoRows), errors.Is(err, postgres.ErrStale) && fence == 0:
		// A plain Write that changed no row found none.
		err = fmt.Errorf("%w for wallet %d in PostgreSQL", ErrNoWallet, id)
	case errors.Is(err, postgres.ErrStale):
		err = s.refused(ctx, id, fence)
	default:
		err = fmt.Errorf("ledger: %s wallet %d: %w", what, id, err)
	}
	return withCause(ctx, err)
}

// refused explains a fenced statement that matched no row: either the
// wallet does not exist or another fence holds it (read in a second
// statement; in the meantime it can only have risen).
func (s *Store) refused(ctx context.Context, id, fence int64) error {
	highest, err := s.Fence(ctx, id)
	if errors.Is(err, ErrNoWallet) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: wallet %d refused fence %d, and then %w", ErrStaleFence, id, fence, err)
	}
	return &StaleFenceError{ID: id, Fence: fence, Highest: highest}
}

// withCause makes err, when ctx has ended, match ctx.Err() and the
// context's cause (a lock's watchdog cancels with lock.ErrNotHeld): pgx
// reports a context that ends during a query in ways of its own.
func withCause(ctx context.Context, err error) error {
	if err == nil || ctx.Err() == nil {
		return err
	}
	if !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%w (%w)", err, ctx.Err())
	}
	if cause := context.Cause(ctx); !errors.Is(err, cause) {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	return err
}

// ResetBatch is how many wallets ResetRange sets up, and DeleteRange
// deletes, per statement: a fraction of a second each.
const ResetBatch = 10_000

// ownerLockKey is the advisory lock that serialises the check and the
// inserts of ResetRange, so that two runs setting up the same ids at once
// cannot both find them free. It is not the schema's (postgres.Open's),
// which a transaction holds while it creates the table: this one is held
// by a session across many statements. The value spells "walletow".
const ownerLockKey int64 = 0x77616c6c65746f77

// ResetRange creates the n wallets first .. first+n-1 with balance, or
// puts existing ones back to balance with fence and version 0, marked as
// this Store's owner's, and calls done (when not nil) after each
// statement with how many are set up so far. Do not call it while spends
// on those wallets run.
//
// A row that another owner set up is left alone: ResetRange then changes
// nothing and returns an *OwnedError. Each statement commits on its own,
// so that a million wallets never hold a transaction open for seconds;
// resets are serialised by a session advisory lock around the check for
// other owners and the statements. When ctx ends it stops: the wallets
// set up so far stay owned, and DeleteRange removes them.
func (s *Store) ResetRange(ctx context.Context, first int64, n int, balance int64, done func(int)) error {
	last := first + int64(n) - 1
	fail := func(err error) error {
		return fmt.Errorf("ledger: reset wallets %d to %d: %w", first, last, err)
	}
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return fail(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", ownerLockKey); err != nil {
		return fail(err)
	}
	defer unlockOwners(ctx, conn)
	// The first row in lo..hi that another owner holds, as an error.
	taken := func(lo, hi int64) error {
		var owned OwnedError
		err := conn.QueryRow(ctx, `
			SELECT id, owner FROM walletlock_wallets
			WHERE id BETWEEN $1 AND $2 AND owner NOT IN ('', $3)
			ORDER BY id LIMIT 1`, lo, hi, s.owner).Scan(&owned.ID, &owned.Owner)
		switch {
		case err == nil:
			return &owned
		case !errors.Is(err, pgx.ErrNoRows):
			return fail(err)
		}
		return nil
	}
	if err := taken(first, last); err != nil {
		return err
	}
	for lo := 0; lo < n; lo += ResetBatch {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		hi := min(lo+ResetBatch, n)
		// The WHERE keeps every row of another owner as it is, whatever
		// got past the check.
		tag, err := conn.Exec(ctx, `
			INSERT INTO walletlock_wallets (id, balance, owner)
			SELECT g, $3, $4 FROM generate_series($1::bigint, $2::bigint) AS g
			ON CONFLICT (id) DO UPDATE
			SET balance = EXCLUDED.balance, fence = 0, version = 0, owner = EXCLUDED.owner
			WHERE walletlock_wallets.owner IN ('', EXCLUDED.owner)`,
			first+int64(lo), first+int64(hi)-1, balance, s.owner)
		if err != nil {
			return fail(err)
		}
		if tag.RowsAffected() != int64(hi-lo) {
			if err := taken(first+int64(lo), first+int64(hi)-1); err != nil {
				return err
			}
			return fail(fmt.Errorf("set up %d of %d wallets", tag.RowsAffected(), hi-lo))
		}
		if done != nil {
			done(hi)
		}
	}
	return nil
}

// unlockOwners gives back the advisory lock of ResetRange, on a context
// of its own (ctx may have ended). A connection that cannot run the
// unlock is closed, which releases the lock too.
func unlockOwners(ctx context.Context, conn *pgxpool.Conn) {
	if conn.Conn().IsClosed() {
		return // and the lock went with it
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	if _, err := conn.Exec(uctx, "SELECT pg_advisory_unlock($1)", ownerLockKey); err != nil {
		conn.Hijack().Close(uctx)
	}
}

// Balances reads the balances of the n wallets first .. first+n-1, in
// order, in one query. It returns ErrNoWallet if any of them is missing.
func (s *Store) Balances(ctx context.Context, first int64, n int) ([]int64, error) {
	last := first + int64(n) - 1
	rows, _ := s.pool.Query(ctx, "SELECT balance FROM walletlock_wallets WHERE id BETWEEN $1 AND $2 ORDER BY id", first, last)
	bal, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("ledger: read %d balances: %w", n, err)
	}
	if len(bal) != n { // the ids are unique and in range: each one missing is one less
		return nil, fmt.Errorf("%w for %d of wallets %d to %d in PostgreSQL", ErrNoWallet, n-len(bal), first, last)
	}
	return bal, nil
}

// DeleteRange removes the n wallets first .. first+n-1 that this Store's
// owner owns, ResetBatch ids per statement: when ctx ends half-way, the
// error says that some rows are left.
func (s *Store) DeleteRange(ctx context.Context, first int64, n int) error {
	last := first + int64(n) - 1
	for lo := first; lo <= last; lo += ResetBatch {
		hi := min(lo+ResetBatch-1, last)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("ledger: delete wallets %d to %d: %w", lo, last, err)
		}
		if _, err := s.pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE id BETWEEN $1 AND $2 AND owner = $3", lo, hi, s.owner); err != nil {
			return fmt.Errorf("ledger: delete wallets %d to %d: %w", lo, last, err)
		}
		if hi == last {
			break // lo+ResetBatch could overflow at the end of the id space
		}
	}
	return nil
}
