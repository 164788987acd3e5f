//go:build unix

package drill

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ErrBusy is returned by TakePrefix when another drill runs on the prefix.
var ErrBusy = errors.New("drill: prefix in use by another drill")

// TakePrefix makes the run the only drill on prefix, whose PostgreSQL rows
// it then owns. The drill's Redis servers are its own and die with it, so
// its run lease lives where its rows do: a PostgreSQL advisory lock, held
// by one connection, that the server drops if this process dies. Call the
// returned function to release it.
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
