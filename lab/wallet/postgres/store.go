package postgres

// The PostgreSQL side: the same wallet, kept in one row, spent four ways.
//
//   - Balance and Write: no protection at all, the broken baseline.
//   - Claim, WriteFenced and SpendFenced: a fencing token from a Redis lock,
//     checked by PostgreSQL, so a holder whose lease ran out cannot write.
//     WriteFencedOnly checks the token on write alone, and loses a spend.
//   - SpendVersioned: no lock, optimistic; the write succeeds only if nobody
//     wrote since the read, otherwise it reads again.
//   - SpendForUpdate: no Redis, a database row lock held through the work.

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/lab/wallet"
)

//go:embed schema.sql
var schemaSQL string

// schemaLockKey is the advisory lock that serialises OpenStore calls. Two
// concurrent CREATE TABLE IF NOT EXISTS can both find no table and then both
// insert its row type, and the loser fails with a unique violation on
// pg_type; `go test ./...` opens stores from several packages at once. The
// value spells "walletlk" in ASCII, to stay clear of other users' keys.
const schemaLockKey int64 = 0x77616c6c65746c6b

// rollbackTimeout bounds a ROLLBACK sent after the caller's ctx has ended.
const rollbackTimeout = 5 * time.Second

// ownerLockKey is the advisory lock that serialises the check and the
// insert of ResetRange, so that two runs setting up the same ids at once
// cannot both find them free. The value spells "walletow".
const ownerLockKey int64 = 0x77616c6c65746f77

// Store keeps wallets in the table walletlock_wallets. It is safe for
// concurrent use; every call is bounded by its ctx.
type Store struct {
	pool  *pgxpool.Pool
	owner string // see Owned; "" for a Store from OpenStore
}

// Owned returns a Store that marks the rows it resets as owner's and that
// resets and deletes only rows it owns (or rows of no owner, ""). A run
// passes its key prefix, which its run lease makes its own, so two runs
// with different prefixes can never reset or delete each other's wallets,
// even when they ask for the same ids.
func (s *Store) Owned(owner string) *Store {
	return &Store{pool: s.pool, owner: owner}
}

// OpenStore returns a Store over pool, creating its table if it does not
// exist yet. It may be called any number of times, concurrently too.
func OpenStore(ctx context.Context, pool *pgxpool.Pool) (*Store, error) {
	if pool == nil {
		return nil, errors.New("wallet: OpenStore needs a pool (see Connect)")
	}
	tx, err := pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("wallet: create table walletlock_wallets: %w", err)
	}
	defer rollback(ctx, tx)
	// Transaction-scoped: the lock goes away with the commit, or with the
	// connection if this process dies half-way.
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", schemaLockKey); err != nil {
		return nil, fmt.Errorf("wallet: create table walletlock_wallets: %w", err)
	}
	if _, err := tx.Exec(ctx, schemaSQL); err != nil {
		return nil, fmt.Errorf("wallet: create table walletlock_wallets: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("wallet: create table walletlock_wallets: %w", err)
	}
	return &Store{pool: pool}, nil
}

// rollback ends tx if it is still open; after Commit it does nothing. It
// does not use ctx as is: when ctx has ended (often the very reason to roll
// back), pgx would drop the connection instead of sending ROLLBACK. The
// server would then roll back too, but later and at the cost of the
// connection; a short context of its own releases the row at once.
func rollback(ctx context.Context, tx pgx.Tx) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
	defer cancel()
	_ = tx.Rollback(rctx) // pgx.ErrTxClosed after a commit; a failure closes the connection
}

// write runs a statement that changes a wallet, outside a transaction, and
// tells a failure whose outcome is unknown (see pgWriteError) from one that
// certainly changed nothing.
func (s *Store) write(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	// Acquired here rather than by pool.Exec, so that a failure to get a
	// connection, when nothing was sent, is not mistaken for one after.
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	defer conn.Release()
	tag, err := conn.Exec(ctx, sql, args...)
	return tag, pgWriteError(err)
}

// pgWriteError classifies the error of a write (an UPDATE outside a
// transaction, or a COMMIT) that may have reached the server, as WriteError
// does for Redis. An ERROR reply from PostgreSQL means the statement, and its
// transaction, did not happen; so does a failure that pgx knows came
// before anything was sent (a context that had already ended, a busy or
// closed connection). Anything else leaves the outcome unknown, and the
// error then matches wallet.ErrUnknownOutcome too: a timeout, a lost connection,
// a context that ended while the statement was in flight, and a FATAL
// reply, which ends the session and may arrive after the commit.
func pgWriteError(err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		severity := pgErr.SeverityUnlocalized
		if severity == "" { // servers before 9.6
			severity = pgErr.Severity
		}
		if severity != "FATAL" && severity != "PANIC" {
			return err
		}
	} else if pgconn.SafeToRetry(err) || errors.Is(err, pgx.ErrTxCommitRollback) {
		return err
	}
	return fmt.Errorf("%w: %w", wallet.ErrUnknownOutcome, err)
}

// withCause makes err, when ctx has ended, match ctx.Err() and the
// context's cause (a lock's watchdog cancels with lock.ErrNotHeld),
// whichever call the end interrupted: pgx reports a context that ends
// during a query as a bare context.Canceled, or as an error of its own.
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

func noWallet(id int64) error {
	return fmt.Errorf("%w for wallet %d in PostgreSQL", wallet.ErrNoWallet, id)
}

// Reset creates wallet id with balance, or puts an existing one back to
// balance with fence and version 0: the starting point of a run. Do not call
// it while spends on the same wallet are running.
func (s *Store) Reset(ctx context.Context, id, balance int64) error {
	return s.ResetRange(ctx, id, 1, balance)
}

// ResetRange is Reset for the n wallets first .. first+n-1, in statements
// of ResetBatch wallets (see ResetRangeEach): a load test sets up 10,000
// wallets in one round trip, a million in a hundred.
//
// A row that another owner set up is left alone: ResetRange then changes
// nothing and returns an *wallet.OwnedError (see Owned).
func (s *Store) ResetRange(ctx context.Context, first int64, n int, balance int64) error {
	return s.ResetRangeEach(ctx, first, n, balance, nil)
}

// Balances reads the balances of the n wallets first .. first+n-1, in
// order, in one query. It returns wallet.ErrNoWallet if any of them is missing.
func (s *Store) Balances(ctx context.Context, first int64, n int) ([]int64, error) {
	rows, err := s.pool.Query(ctx,
		"SELECT id, balance FROM walletlock_wallets WHERE id BETWEEN $1 AND $2",
		first, first+int64(n)-1)
	if err != nil {
		return nil, fmt.Errorf("wallet: read %d balances: %w", n, err)
	}
	defer rows.Close()
	bal := make([]int64, n)
	seen := 0
	for rows.Next() {
		var id, b int64
		if err := rows.Scan(&id, &b); err != nil {
			return nil, fmt.Errorf("wallet: read balances: %w", err)
		}
		bal[id-first] = b
		seen++
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("wallet: read balances: %w", err)
	}
	if seen != n {
		return nil, fmt.Errorf("%w for %d of wallets %d to %d in PostgreSQL", wallet.ErrNoWallet, n-seen, first, first+int64(n)-1)
	}
	return bal, nil
}

// DeleteRange removes the n wallets first .. first+n-1 that this Store's
// owner owns (see Owned); missing ones and other runs' are left alone. It
// deletes ResetBatch ids per statement, each committed on its own: when
// ctx ends half-way, what was deleted stays deleted, and the error says
// that some rows are left.
func (s *Store) DeleteRange(ctx context.Context, first int64, n int) error {
	last := first + int64(n) - 1
	for lo := first; lo <= last; lo += ResetBatch {
		hi := min(lo+ResetBatch-1, last)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("wallet: delete wallets %d to %d: %w", lo, last, err)
		}
		if _, err := s.pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE id BETWEEN $1 AND $2 AND owner = $3", lo, hi, s.owner); err != nil {
			return fmt.Errorf("wallet: delete wallets %d to %d: %w", lo, last, err)
		}
		if hi == last {
			break // lo+ResetBatch could overflow at the end of the id space
		}
	}
	return nil
}

// Delete removes wallets this Store's owner owns (see Owned); ids that do
// not exist, or that another run owns, are left alone.
func (s *Store) Delete(ctx context.Context, ids ...int64) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := s.pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE id = ANY($1) AND owner = $2", ids, s.owner); err != nil {
		return fmt.Errorf("wallet: delete wallets %v: %w", ids, err)
	}
	return nil
}

// Balance reads the balance of wallet id.
func (s *Store) Balance(ctx context.Context, id int64) (int64, error) {
	var bal int64
	err := s.pool.QueryRow(ctx, "SELECT balance FROM walletlock_wallets WHERE id = $1", id).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, noWallet(id)
	}
	if err != nil {
		return 0, fmt.Errorf("wallet: read wallet %d: %w", id, err)
	}
	wallet.ReadSeen(ctx, bal)
	return bal, nil
}

// Fence reads the highest fence that has claimed wallet id (0 if none).
func (s *Store) Fence(ctx context.Context, id int64) (int64, error) {
	var fence int64
	err := s.pool.QueryRow(ctx, "SELECT fence FROM walletlock_wallets WHERE id = $1", id).Scan(&fence)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, noWallet(id)
	}
	if err != nil {
		return 0, fmt.Errorf("wallet: read the fence of wallet %d: %w", id, err)
	}
	return fence, nil
}

// Write stores balance whatever happened since the caller read: the broken
// baseline, which loses every update made in between. The CHECK constraint
// still refuses a negative balance.
//
// An error that matches wallet.ErrUnknownOutcome means the UPDATE was sent and
// its reply never came: it may have landed. When ctx ends, the error
// matches ctx.Err() and the context's cause.
func (s *Store) Write(ctx context.Context, id, balance int64) error {
	tag, err := s.write(ctx,
		"UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1",
		id, balance)
	if err != nil {
		return withCause(ctx, fmt.Errorf("wallet: write wallet %d: %w", id, err))
	}
	if tag.RowsAffected() == 0 {
		return noWallet(id)
	}
	return nil
}

// Fenced access.
//
// Checking the fence only when writing (`WHERE fence < $mine`) is not
// enough: it orders the writes but does not make the reads fresh.
//
//	A (fence 1) reads 100 and stalls; its lease expires; B (fence 2) reads 100.
//	A wakes and writes 90 (1 > 0, accepted); B writes 90 (2 > 1, accepted).
//	Two spends, one recorded.
//
// So the fence is taken at the read: Claim stamps the row with the reader's
// fence, and WriteFenced writes only while the row still carries it. In the
// timeline above B's read moves the row to fence 2, and A's write, computed
// from a balance B may since have spent, finds no row to update.

// Claim reads the balance of wallet id and stamps the row with fence, unless
// the row has already seen this fence or a higher one. A fence claims once:
// after a Redis restart the counter can hand out a number again that an
// older, perhaps paused, holder still carries, and the two must not share
// the row. (Redis heals: the refusal reports Highest for lock.RaiseFence.)
//
// It returns wallet.ErrBadFence for a fence below 1, a *wallet.StaleFenceError (matching
// wallet.ErrStaleFence) when the row has seen this fence or a higher one,
// wallet.ErrNoWallet when there is no such wallet. When ctx ends, the error
// matches ctx.Err() and the context's cause.
func (s *Store) Claim(ctx context.Context, id, fence int64) (balance int64, err error) {
	if fence < 1 {
		return 0, fmt.Errorf("%w, got %d", wallet.ErrBadFence, fence)
	}
	err = s.pool.QueryRow(ctx,
		"UPDATE walletlock_wallets SET fence = $2 WHERE id = $1 AND fence < $2 RETURNING balance",
		id, fence).Scan(&balance)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, withCause(ctx, s.refused(ctx, id, fence))
	}
	if err != nil {
		return 0, withCause(ctx, fmt.Errorf("wallet: claim wallet %d with fence %d: %w", id, fence, err))
	}
	wallet.ReadSeen(ctx, balance)
	return balance, nil
}

// WriteFenced stores balance, computed from what Claim returned with the
// same fence, only if no other fence has claimed the row since. It returns
// the same errors as Claim, and one that matches wallet.ErrUnknownOutcome when
// the UPDATE was sent and its reply never came: it may have landed.
func (s *Store) WriteFenced(ctx context.Context, id, fence, balance int64) error {
	if fence < 1 {
		return fmt.Errorf("%w, got %d", wallet.ErrBadFence, fence)
	}
	tag, err := s.write(ctx,
		"UPDATE walletlock_wallets SET balance = $3, version = version + 1 WHERE id = $1 AND fence = $2",
		id, fence, balance)
	if err != nil {
		return withCause(ctx, fmt.Errorf("wallet: write wallet %d with fence %d: %w", id, fence, err))
	}
	if tag.RowsAffected() == 0 {
		return withCause(ctx, s.refused(ctx, id, fence))
	}
	return nil
}

// WriteFencedOnly is the fence checked on write only, the mistake the
// comment above Claim describes, kept so that step 5 can show it lose a
// spend: it stores balance and stamps the row with fence if the row has
// seen no fence as high, whatever was written since the caller read. A
// holder needs no claim before it, and that is the flaw: when A (fence 1)
// and B (fence 2) both read 100 before either writes, A's 90 lands (1 > 0)
// and then B's 90 (2 > 1). Two spends, one recorded. Use Claim and
// WriteFenced.
//
// It returns the same errors as WriteFenced.
func (s *Store) WriteFencedOnly(ctx context.Context, id, fence, balance int64) error {
	if fence < 1 {
		return fmt.Errorf("%w, got %d", wallet.ErrBadFence, fence)
	}
	tag, err := s.write(ctx,
		"UPDATE walletlock_wallets SET balance = $3, fence = $2, version = version + 1 WHERE id = $1 AND fence < $2",
		id, fence, balance)
	if err != nil {
		return withCause(ctx, fmt.Errorf("wallet: write wallet %d with fence %d on write only: %w", id, fence, err))
	}
	if tag.RowsAffected() == 0 {
		return withCause(ctx, s.refused(ctx, id, fence))
	}
	return nil
}

// refused explains a fenced UPDATE that matched no row: either the wallet
// does not exist or another fence holds it. The fence is read in a second
// statement; in the meantime it can only have risen (or been Reset).
func (s *Store) refused(ctx context.Context, id, fence int64) error {
	highest, err := s.Fence(ctx, id)
	if errors.Is(err, wallet.ErrNoWallet) {
		return err
	}
	if err != nil {
		return fmt.Errorf("%w: wallet %d refused fence %d, and then %w", wallet.ErrStaleFence, id, fence, err)
	}
	return &wallet.StaleFenceError{ID: id, Fence: fence, Highest: highest}
}

// SpendFenced is Spend for a holder of fence: it claims and reads the
// balance, refuses (false, nil) when it is below amount, does the work
// (honouring ctx, see Work) and writes the new balance if the row still
// carries fence. Nothing is written unless it returns (true, nil) or an
// unknown outcome (below). A refusal for short funds still leaves the
// claim, which only shuts out older fences.
//
// Errors: those of Claim and WriteFenced, and Work's when ctx ends. An
// error that matches wallet.ErrUnknownOutcome means the write was sent and its
// reply never came: the spend may have landed. When ctx ends, the error
// matches ctx.Err() and the context's cause, whichever call it ended.
func (s *Store) SpendFenced(ctx context.Context, id, fence, amount int64, work time.Duration) (bool, error) {
	ok, err := s.spendFenced(ctx, id, fence, amount, work)
	return ok, withCause(ctx, err)
}

func (s *Store) spendFenced(ctx context.Context, id, fence, amount int64, work time.Duration) (bool, error) {
	bal, err := s.Claim(ctx, id, fence)
	if err != nil {
		return false, err
	}
	if bal < amount {
		return false, nil
	}
	if err := wallet.Work(ctx, work); err != nil {
		return false, err
	}
	if err := s.WriteFenced(ctx, id, fence, bal-amount); err != nil {
		return false, err
	}
	return true, nil
}

// SpendVersioned spends without any lock: it reads the balance and the
// row's version, refuses (false, n, nil) when funds are short, does the work
// and writes only if the version is unchanged. When another spend wrote
// first it counts a conflict, waits a moment and starts over, until it
// succeeds, funds run short or ctx ends. It cannot spin forever: every
// conflict means another spend succeeded.
//
// The work is redone after each conflict; that is the price of optimism
// when many spenders contend for one wallet.
//
// An error that matches wallet.ErrUnknownOutcome means the versioned UPDATE was
// sent and its reply never came: the spend may have landed. When ctx ends,
// the error matches ctx.Err() and the context's cause, whichever call it
// ended.
func (s *Store) SpendVersioned(ctx context.Context, id, amount int64, work time.Duration) (ok bool, conflicts int, err error) {
	ok, conflicts, err = s.spendVersioned(ctx, id, amount, work)
	return ok, conflicts, withCause(ctx, err)
}

func (s *Store) spendVersioned(ctx context.Context, id, amount int64, work time.Duration) (ok bool, conflicts int, err error) {
	for {
		var bal, version int64
		err := s.pool.QueryRow(ctx,
			"SELECT balance, version FROM walletlock_wallets WHERE id = $1", id).Scan(&bal, &version)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, conflicts, noWallet(id)
		}
		if err != nil {
			return false, conflicts, fmt.Errorf("wallet: read wallet %d: %w", id, err)
		}
		wallet.ReadSeen(ctx, bal)
		if bal < amount {
			return false, conflicts, nil
		}
		if err := wallet.Work(ctx, work); err != nil {
			return false, conflicts, err
		}
		tag, err := s.write(ctx,
			"UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1 AND version = $3",
			id, bal-amount, version)
		if err != nil {
			return false, conflicts, fmt.Errorf("wallet: write wallet %d: %w", id, err)
		}
		if tag.RowsAffected() == 1 {
			return true, conflicts, nil
		}
		conflicts++
		// A random pause, so that the losers of one round do not all read
		// again at the same instant and collide again.
		if err := wallet.Work(ctx, rand.N(2*time.Millisecond)); err != nil {
			return false, conflicts, err
		}
	}
}

// SpendForUpdate spends under a PostgreSQL row lock instead of a Redis one:
// in one transaction it reads the balance with SELECT ... FOR UPDATE, does
// the work and writes. Other spenders of the same wallet wait for the
// commit. If anything fails, ctx ending during the work included, the
// transaction is rolled back: nothing is written and the row is free.
//
// The lock lives as long as the transaction, so a spender that dies or
// loses its connection releases it; there is no TTL to guess.
//
// Until the COMMIT is sent, a failure is certain: the transaction never
// commits. An error that matches wallet.ErrUnknownOutcome means the COMMIT was
// sent and its reply never came: the spend may have landed. When ctx ends,
// the error matches ctx.Err() and the context's cause, whichever call it
// ended.
func (s *Store) SpendForUpdate(ctx context.Context, id, amount int64, work time.Duration) (bool, error) {
	ok, err := s.spendForUpdate(ctx, id, amount, work)
	return ok, withCause(ctx, err)
}

func (s *Store) spendForUpdate(ctx context.Context, id, amount int64, work time.Duration) (bool, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("wallet: begin a spend of wallet %d: %w", id, err)
	}
	defer rollback(ctx, tx)
	var bal int64
	err = tx.QueryRow(ctx, "SELECT balance FROM walletlock_wallets WHERE id = $1 FOR UPDATE", id).Scan(&bal)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, noWallet(id)
	}
	if err != nil {
		return false, fmt.Errorf("wallet: lock wallet %d: %w", id, err)
	}
	wallet.ReadSeen(ctx, bal) // tells a history that records this spend what it read (reads.go)
	if bal < amount {
		return false, nil
	}
	if err := wallet.Work(ctx, work); err != nil {
		return false, err
	}
	if _, err := tx.Exec(ctx,
		"UPDATE walletlock_wallets SET balance = $2, version = version + 1 WHERE id = $1",
		id, bal-amount); err != nil {
		return false, fmt.Errorf("wallet: write wallet %d: %w", id, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("wallet: commit a spend of wallet %d: %w", id, pgWriteError(err))
	}
	return true, nil
}

// ResetBatch is how many wallets ResetRangeEach sets up, and DeleteRange
// deletes, per statement: few enough that a statement takes a fraction of
// a second and holds no lock for longer, and that a context that ends is
// noticed between two of them.
const ResetBatch = 10_000

// ResetRangeEach is ResetRange, and calls done (when not nil) after each
// statement with how many wallets are set up so far, for a progress bar.
//
// Each statement commits on its own, so that a million wallets never hold
// a transaction open for seconds in a shared database. Resets of any range
// are serialised by a session advisory lock, taken on the connection that
// runs them, around the check for other owners and the statements. When
// ctx ends between two statements it stops: the wallets set up so far stay
// set up, and owned, and DeleteRange removes them.
func (s *Store) ResetRangeEach(ctx context.Context, first int64, n int, balance int64, done func(int)) error {
	last := first + int64(n) - 1
	fail := func(err error) error {
		return fmt.Errorf("wallet: reset wallets %d to %d: %w", first, last, err)
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
		var owned wallet.OwnedError
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

// unlockOwners gives back the advisory lock of ResetRangeEach, with a
// short context of its own (ctx may have ended). A connection that cannot
// run the unlock is closed, which releases the lock too, rather than going
// back to the pool still holding it.
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
