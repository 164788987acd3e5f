package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/internal/safe"
)

// Connect returns a pool for DATABASE_URL, read by pgx's ParseConfig
// (postgres://walletlock:walletlock@localhost:5432/walletlock by default),
// once the server has answered. Its errors never show the password.
func Connect(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := Config()
	if err != nil {
		return nil, err
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err == nil {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		if err = pool.Ping(pctx); err == nil {
			return pool, nil
		}
		pool.Close()
	}
	if connect, ok := errors.AsType[*pgconn.ConnectError](err); ok {
		err = connect.Unwrap() // without "failed to connect to `user=...`": a password can sit where the user goes
	}
	pg, replied := errors.AsType[*pgconn.PgError](err) // then it runs, and refused us
	switch {
	case replied && strings.HasPrefix(pg.Code, "28"): // its words may name the user, which may be a password
		return nil, fmt.Errorf("postgres: PostgreSQL at %s refused the user and password (SQLSTATE %s): check them in DATABASE_URL, postgres://user:password@host:5432/db", where, pg.Code)
	case replied:
		return nil, fmt.Errorf("postgres: PostgreSQL at %s refused us: %w (check DATABASE_URL)", where, err)
	}
	return nil, fmt.Errorf("postgres: PostgreSQL at %s: %w (is it running? `make up` starts one; DATABASE_URL says where it is)", where, err)
}

// Config is DATABASE_URL as Connect reads it, without connecting.
func Config() (*pgxpool.Config, error) {
	raw := cmp.Or(os.Getenv("DATABASE_URL"), "postgres://walletlock:walletlock@localhost:5432/walletlock?sslmode=disable")
	if err := safe.CheckURL("DATABASE_URL", raw); err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return nil, errors.New("postgres: DATABASE_URL is not valid; the form is postgres://user:password@host:5432/db?sslmode=disable")
	}
	return cfg, nil
}
