//go:build !unix

package launch

import (
	"context"
	"errors"
)

// The daemons of daemon_unix.go need Unix: sessions, signals, and
// PostgreSQL's user. Elsewhere every call fails with errNoDaemons.
var errNoDaemons = errors.New("launch: servers that outlive this program need Unix here; use Docker Desktop (docker compose) or WSL")

// Daemon is a server of ours that outlives us; see daemon_unix.go.
type Daemon struct {
	Kind    string `json:"kind"`
	Port    int    `json:"port"`
	Dir     string `json:"dir"`
	Pid     int    `json:"pid,omitempty"`
	Started string `json:"started,omitempty"`
}

func (d *Daemon) Check() error { return errors.Join(ErrNotOurs, errNoDaemons) }
func (d *Daemon) Stop() error  { return d.Check() }

func StartRedisDaemon(context.Context, string, string, int, ...string) (*Daemon, error) {
	return nil, errNoDaemons
}
func ConfQuote(s string) string    { return s }
func PostgresCanEnter(string) bool { return true }

type PostgresCluster struct{ Dir string }

func OpenPostgresCluster(string) (*PostgresCluster, error)         { return nil, errNoDaemons }
func (c *PostgresCluster) Data() string                            { return c.Dir }
func (c *PostgresCluster) Init(context.Context) error              { return errNoDaemons }
func (c *PostgresCluster) Psql(context.Context, int, string) error { return errNoDaemons }
func (c *PostgresCluster) PostgresVersion() string                 { return "" }
func (c *PostgresCluster) Start(context.Context, string, int) (*Daemon, error) {
	return nil, errNoDaemons
}
func PackagedPsql(context.Context, int, string) error { return errNoDaemons }
