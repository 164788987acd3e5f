//go:build !unix

package launch

import (
	"context"
	"errors"
)

// Postgres is a PostgreSQL of ours; see postgres_unix.go. Elsewhere than
// Unix, StartPostgres fails with ErrNoPostgres.
type Postgres struct {
	Addr, User string
	Log        *Log
}

func (g *Group) StartPostgres(context.Context, string) (*Postgres, error) {
	return nil, errors.Join(ErrNoPostgres, errors.New("not supported on this system"))
}

func (g *Group) StartPostgresLocked(ctx context.Context, user string) (*Postgres, error) {
	return g.StartPostgres(ctx, user)
}

func (s *Postgres) URL(db string) string       { return "" }
func (s *Postgres) SocketURL(db string) string { return "" }
func (s *Postgres) Stop()                      {}
func (s *Postgres) Close()                     {}
