//go:build !unix

package testenv

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresServer is a PostgreSQL of the test's own; see pgserver_unix.go.
// Elsewhere than Unix, StartPostgres skips the test.
type PostgresServer struct{ Addr, URL string }

func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	unavailable(t, "a PostgreSQL of the test's own", errors.New("not supported on this system"))
	return nil
}

func (s *PostgresServer) Use(testing.TB) *pgxpool.Pool { return nil }
func (s *PostgresServer) Freeze(testing.TB)            {}
func (s *PostgresServer) Thaw()                        {}
func (s *PostgresServer) Stop()                        {}
func (s *PostgresServer) Start()                       {}
