package env

// Where the programs find PostgreSQL: DATABASE_URL, parsed by the root's
// postgres.Config, a first connection within ConnectTimeout, and a refusal
// turned into one line that says what is wrong and the fix, never showing
// the user or the password.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/wallet/postgres"
)

// ConnectPostgres returns a pool for DATABASE_URL after checking that the
// server answers. Like Connect for Redis, its error is one line that names
// the server as postgres://host:port/db, what went wrong and the fix.
func ConnectPostgres(ctx context.Context) (*pgxpool.Pool, error) {
	cfg, err := postgres.Config()
	if err != nil {
		return nil, err
	}
	cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %s", postgresURL(cfg.ConnConfig), safe.Line(err.Error()))
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, postgresError(cfg.ConnConfig, err)
	}
	return pool, nil
}

// PostgresConfig is DATABASE_URL as ConnectPostgres reads it (cmd/servers
// asks it what to start). Its errors quote no part of the URL.
func PostgresConfig() (*pgx.ConnConfig, error) {
	cfg, err := postgres.Config()
	if err != nil {
		return nil, err
	}
	return cfg.ConnConfig, nil
}

// postgresURL names the server cfg points at, as postgres://host:port/db,
// without the user and password.
func postgresURL(cfg *pgx.ConnConfig) string {
	return "postgres://" + net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))) + "/" + cfg.Database
}

// postgresError turns a failed first connection into one line that says
// what is wrong and what to do. It quotes neither pgx's "failed to connect
// to `user=...`" prefix nor a server message that names the user.
func postgresError(cfg *pgx.ConnConfig, err error) error {
	where := postgresURL(cfg)
	var connErr *pgconn.ConnectError
	if errors.As(err, &connErr) && connErr.Unwrap() != nil {
		err = connErr.Unwrap() // "127.0.0.1:5432 (localhost): ...", without the user
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server's words, with the user name (part of the URL's user
		// info) taken out: PostgreSQL quotes it in authentication errors.
		msg := pgErr.Message
		if cfg.User != "" {
			msg = strings.ReplaceAll(msg, `"`+cfg.User+`"`, `"(user)"`)
		}
		reply := fmt.Sprintf("%s (SQLSTATE %s)", safe.Line(msg), pgErr.Code)
		switch {
		case pgErr.Code == "3D000": // invalid_catalog_name
			return fmt.Errorf("%s: the server has no database %q (SQLSTATE 3D000): check the database name at the end of DATABASE_URL, or create the database", where, cfg.Database)
		case pgErr.Code == "28P01" && cfg.Password == "": // invalid_password
			return fmt.Errorf("%s refused the credentials (%s): DATABASE_URL has no password; the form is postgres://user:password@host:5432/db", where, reply)
		case strings.HasPrefix(pgErr.Code, "28"): // invalid_password, invalid_authorization_specification
			return fmt.Errorf("%s refused the credentials (%s): check the user and password in DATABASE_URL", where, reply)
		default:
			return fmt.Errorf("%s refused the connection (%s)", where, reply)
		}
	}
	msg := safe.Line(err.Error())
	switch {
	case strings.Contains(msg, "server refused TLS connection"):
		return fmt.Errorf("%s does not speak TLS (server refused TLS connection), which the sslmode of DATABASE_URL requires: use sslmode=disable (or prefer) for this server, or turn on ssl in its configuration", where)
	case strings.Contains(msg, "tls error"):
		return fmt.Errorf("%s: the TLS handshake failed (%s): check sslmode (and sslrootcert) in DATABASE_URL", where, msg)
	}
	return fmt.Errorf("%s is not reachable (%s): is PostgreSQL running? try `make up`", where, msg)
}

// PostgresVersion returns the server's version number, such as "15.18" (without
// the distribution suffix SHOW server_version may add), for the reports.
func PostgresVersion(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var v string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("env: read the PostgreSQL version: %w", err)
	}
	if f := strings.Fields(v); len(f) > 0 {
		return f[0], nil
	}
	return "", errors.New("env: PostgreSQL reported an empty server_version")
}
