package judge

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/wallet/postgres"
)

// The judge's wallets are rows of the root's table (wallet/postgres),
// owned by the run ("judge:" and ten random characters). The run holds a
// PostgreSQL advisory lock named after its owner for as long as it lives:
// the server drops it when the judge dies, even by SIGKILL, and the next
// judge then deletes the rows it left.

type db struct {
	pool  *pgxpool.Pool
	store *postgres.Store
	conn  *pgxpool.Conn // holds the run's advisory lock
}

// openDB connects, takes the run's lock, and deletes what dead judges left.
func (r *runner) openDB(ctx context.Context) (*db, error) {
	if r.db != nil {
		return r.db, nil
	}
	pool, err := r.connect(ctx)
	if err != nil {
		return nil, err
	}
	d := &db{pool: pool}
	if d.store, err = postgres.Open(ctx, pool, r.owner); err == nil {
		if d.conn, err = pool.Acquire(ctx); err == nil {
			_, err = d.conn.Exec(ctx, "SELECT pg_advisory_lock(hashtextextended($1, 0))", r.owner)
		}
	}
	if err != nil {
		if d.conn != nil {
			d.conn.Release()
		}
		pool.Close()
		return nil, fmt.Errorf("judge: PostgreSQL: %w", err)
	}
	if gone := d.sweep(ctx); len(gone) > 0 && r.c.note != nil {
		r.c.note(fmt.Sprintf("judge: removed the PostgreSQL rows of judges killed before their clean-up (%s)", strings.Join(gone, ", ")))
	}
	r.db = d
	return d, nil
}

// connect opens Options.Database, or DATABASE_URL when it is empty, as
// the article's programs do.
func (r *runner) connect(ctx context.Context) (*pgxpool.Pool, error) {
	url := r.c.o.Database
	if url == "" {
		return postgres.Connect(ctx)
	}
	if err := safe.CheckURL("Options.Database", url); err != nil {
		return nil, err
	}
	pool, err := pgxpool.New(ctx, url)
	if err == nil {
		if err = pool.Ping(ctx); err != nil {
			pool.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("judge: PostgreSQL at Options.Database: %w", err)
	}
	return pool, nil
}

// sweep deletes the rows of judges that died before their clean-up: those
// whose advisory lock is free.
func (d *db) sweep(ctx context.Context) (gone []string) {
	rows, err := d.pool.Query(ctx, "SELECT DISTINCT owner FROM walletlock_wallets WHERE owner LIKE 'judge:%'")
	if err != nil {
		return nil
	}
	var owners []string
	for rows.Next() {
		var o string
		if rows.Scan(&o) == nil {
			owners = append(owners, o)
		}
	}
	rows.Close()
	for _, o := range owners {
		var free bool
		conn, err := d.pool.Acquire(ctx)
		if err != nil {
			return gone
		}
		if conn.QueryRow(ctx, "SELECT pg_try_advisory_lock(hashtextextended($1, 0))", o).Scan(&free) == nil && free {
			if _, err := conn.Exec(ctx, "DELETE FROM walletlock_wallets WHERE owner = $1", o); err == nil {
				gone = append(gone, o)
			}
			conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", o)
		}
		conn.Release()
	}
	return gone
}

// wallet makes a wallet of the run's with balance, and returns its id:
// random, in the range the tests use too (far above the steps' ids).
func (r *runner) wallet(ctx context.Context, balance int64) (int64, error) {
	d, err := r.openDB(ctx)
	if err != nil {
		return 0, err
	}
	var b [8]byte
	rand.Read(b[:])
	id := 1_000_000_000 + int64(binary.BigEndian.Uint64(b[:])%8_000_000_000_000_000_000)
	return id, d.store.Reset(ctx, id, balance)
}

func (r *runner) balance(ctx context.Context, id int64) (int64, error) {
	d, err := r.openDB(ctx)
	if err != nil {
		return 0, err
	}
	return d.store.Balance(ctx, id)
}

// closeDB deletes the run's rows and lets its advisory lock go.
func (r *runner) closeDB() {
	if r.db == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r.db.store.Clear(ctx)
	r.db.conn.Exec(ctx, "SELECT pg_advisory_unlock(hashtextextended($1, 0))", r.owner)
	r.db.conn.Release()
	r.db.pool.Close()
}
