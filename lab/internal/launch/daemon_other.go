//go:build !unix

package launch

import (
	"context"
	"errors"
)

// The daemons of daemon_unix.go need Unix: pid files, signals, and
// PostgreSQL's user. Elsewhere every call fails with errNoDaemons.
var errNoDaemons = errors.New("launch: servers that outlive this program need Unix here; use Docker Desktop (docker compose) or WSL")

func StartRedisDaemon(context.Context, string, string, int, ...string) error { return errNoDaemons }
func ConfQuote(s string) string                                              { return s }
func DaemonPid(string, string) (int, bool)                                   { return 0, false }
func StopDaemon(string, string) bool                                         { return false }
func PostgresCanEnter(string) bool                                           { return true }

type PostgresCluster struct{ Dir string }

func OpenPostgresCluster(string) (*PostgresCluster, error)         { return nil, errNoDaemons }
func (c *PostgresCluster) Init(context.Context) error              { return errNoDaemons }
func (c *PostgresCluster) Start(context.Context, int) error        { return errNoDaemons }
func (c *PostgresCluster) Stop(context.Context) error              { return errNoDaemons }
func (c *PostgresCluster) Psql(context.Context, int, string) error { return errNoDaemons }
func (c *PostgresCluster) PostgresVersion() string                 { return "" }
func PackagedPsql(context.Context, int, string) error              { return errNoDaemons }
