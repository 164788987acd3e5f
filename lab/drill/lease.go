//go:build unix

package drill

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/lab/internal/ledger"
)

// ErrBusy is returned by TakePrefix when another drill runs on the prefix.
var ErrBusy = errors.New("drill: prefix in use by another drill")

// MaxWallets bounds a drill's wallets: a drill on a prefix uses at most the
// ids FirstID .. FirstID+MaxWallets-1.
const MaxWallets = 100

// FirstID is the first wallet id of a drill on prefix, unless told one
// (ledger.FirstIDFor of "drill " and the prefix, which no prefix can be,
// so that the load test on the same prefix gets another block).
func FirstID(prefix string) int64 { return ledger.FirstIDFor("drill " + prefix) }

// TakePrefix makes the run the only drill on prefix, whose PostgreSQL rows
// it then owns. The drill's Redis servers are its own and die with it, so
// its run lease lives where its rows do: an advisory lock of one
// connection, which PostgreSQL drops when this process dies.
func TakePrefix(ctx context.Context, pool *pgxpool.Pool, prefix string) (func(), error) {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("drill: take the run lease on prefix %q: %w", prefix, err)
	}
	key := "walletlock:drill-run:" + prefix
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", key).Scan(&ok); err != nil {
		conn.Release()
		return nil, fmt.Errorf("drill: take the run lease on prefix %q: %w", prefix, err)
	}
	if !ok {
		conn.Release()
		return nil, fmt.Errorf("%w: %q; choose another with -prefix", ErrBusy, prefix)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", key)
		conn.Release()
	}, nil
}

// TakeOver clears the n wallets from first for a drill on prefix that
// holds its run lease (TakePrefix), of the rows that a drill killed before
// its clean-up left there, and says so in one line ("" when there were
// none). Such rows are provably a dead run's when
//
//   - they are the prefix's own: no other drill can hold its lease now;
//   - or they are another prefix's, lie within the ids a drill on that
//     prefix derives (FirstID), and that prefix's run lease is free. The
//     lease is held while its rows are deleted, so that no drill on it
//     starts in between.
//
// Rows of anyone else it leaves alone, and the Store's ResetRange then
// refuses them with a *ledger.OwnedError.
func TakeOver(ctx context.Context, pool *pgxpool.Pool, prefix string, first int64, n int) (string, error) {
	last := first + int64(n) - 1
	type left struct {
		owner      string
		count      int
		minID, max int64
	}
	rows, _ := pool.Query(ctx, `SELECT owner, count(*), min(id), max(id) FROM walletlock_wallets
		WHERE id BETWEEN $1 AND $2 AND owner <> '' GROUP BY owner ORDER BY owner`, first, last)
	found, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (l left, err error) {
		return l, row.Scan(&l.owner, &l.count, &l.minID, &l.max)
	})
	if err != nil {
		return "", fmt.Errorf("drill: look for rows a dead drill left: %w", err)
	}
	var taken []string
	for _, l := range found {
		if l.owner != prefix {
			if lo := FirstID(l.owner); l.minID < lo || l.max >= lo+MaxWallets {
				continue // not where a drill on that prefix writes
			}
			release, err := TakePrefix(ctx, pool, l.owner)
			if errors.Is(err, ErrBusy) {
				continue // alive: ResetRange refuses its rows
			}
			if err != nil {
				return "", err
			}
			var dead *ledger.Store
			if dead, err = ledger.Open(ctx, pool, l.owner); err == nil {
				err = dead.DeleteRange(ctx, first, n)
			}
			release()
			if err != nil {
				return "", fmt.Errorf("drill: take over the rows of prefix %q, whose drill died: %w", l.owner, err)
			}
		}
		taken = append(taken, fmt.Sprintf("%d of prefix %q", l.count, l.owner))
	}
	if len(taken) == 0 {
		return "", nil
	}
	return fmt.Sprintf("took over the rows a drill left in wallets %d to %d when it died (its run lease had expired): %s",
		first, last, strings.Join(taken, ", ")), nil
}
