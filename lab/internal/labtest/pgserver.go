package labtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/launch"
)

// PostgresServer is a PostgreSQL of the test's own (see internal/launch),
// on a free loopback port, for a test that must not touch the shared
// PostgreSQL. It trusts local connections: its URL has no password.
type PostgresServer struct {
	Addr string // host:port
	URL  string // a DATABASE_URL for its database walletlock
}

// StartPostgres initialises a cluster in a temporary folder, with a
// superuser walletlock and a database walletlock, starts it, and stops it
// when the test ends. A test running as root runs it as the user postgres.
// Without the binaries the test skips, or fails when CI is set.
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, err := group(t).StartPostgres(ctx, "walletlock")
	if errors.Is(err, launch.ErrNoPostgres) {
		testenv.Missing(t, err)
	}
	if err != nil {
		t.Fatalf("labtest: %v", err)
	}
	t.Cleanup(srv.Close) // before the group's KillAll: a clean shutdown
	logOnFailure(t, srv.Log)
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatalf("labtest: own PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE walletlock"); err != nil {
		t.Fatalf("labtest: own PostgreSQL: CREATE DATABASE: %v", err)
	}
	return &PostgresServer{Addr: srv.Addr, URL: srv.URL("walletlock")}
}

// Use points the programs and labtest.Postgres at this server for the
// rest of the test (DATABASE_URL), and returns a pool for it, as
// RedisServer.Use returns a client.
func (s *PostgresServer) Use(t testing.TB) *pgxpool.Pool {
	t.Helper()
	t.Setenv("DATABASE_URL", s.URL)
	return testenv.Postgres(t)
}
