//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Postgres is a PostgreSQL of ours: a cluster initialised in a temporary
// folder of its own, listening on a free loopback port.
type Postgres struct {
	Addr string // 127.0.0.1:port
	User string // its superuser
	Log  *Log   // what the server wrote

	c    *PostgresCluster // its folder, removed by Close
	proc *Proc
}

// StartPostgres initialises a cluster whose superuser is user, trusting
// local connections (its URLs carry no password), starts it and waits
// until it accepts connections. initdb and postgres refuse to run as
// root: as root they run as the user postgres, from a folder that user
// owns. Close stops it and removes its folder.
func (g *Group) StartPostgres(ctx context.Context, user string) (*Postgres, error) {
	return g.startPostgres(ctx, user, "--auth=trust")
}

// StartPostgresLocked is StartPostgres for a server that other machines
// reach, through a proxy: a connection over TCP must give a password
// (scram-sha-256), so the superuser, which has none, comes in through the
// Unix socket alone (SocketURL), and the roles it creates with passwords
// over TCP.
func (g *Group) StartPostgresLocked(ctx context.Context, user string) (*Postgres, error) {
	return g.startPostgres(ctx, user, "--auth-local=trust", "--auth-host=scram-sha-256")
}

func (g *Group) startPostgres(ctx context.Context, user string, auth ...string) (*Postgres, error) {
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("launch: find a free port: %w", err)
	}
	// Not under the caller's temporary folder: its parents may be closed
	// to the user postgres.
	dir, err := os.MkdirTemp("", "walletlock-pg-")
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	s := &Postgres{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), User: user, Log: &Log{}}
	if s.c, err = OpenPostgresCluster(dir); err == nil {
		if err = s.c.initdb(ctx, user, auth...); err == nil {
			err = s.start(ctx, g, port)
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// start starts the server and waits, at most 20 s, until it accepts
// connections.
func (s *Postgres) start(ctx context.Context, g *Group, port int) error {
	cmd := s.c.server("127.0.0.1", port)
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	p, err := g.Start("postgres "+s.Addr, cmd)
	if err != nil {
		return err
	}
	s.proc = p
	if err := waitReady(ctx, p.exited, 20*time.Second, func() bool { return s.c.ready(p.cmd.Process.Pid) }); err != nil {
		s.Stop()
		return fmt.Errorf("launch: postgres at %s: %w: %s", s.Addr, err, s.Log.LastLine())
	}
	return nil
}

// postgresUser returns who to run PostgreSQL as, given to it the folder
// dir: nil (this process's user) unless this process runs as root.
func postgresUser(dir string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	cred, err := lookupPostgres()
	if err != nil {
		return nil, err
	}
	if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	return cred, nil
}

// lookupPostgres returns the credentials of the user postgres.
func lookupPostgres() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, errors.Join(ErrNoPostgres, fmt.Errorf("root may not run PostgreSQL, and there is no user postgres to run it as (apt-get install postgresql creates it): %w", err))
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

// URL is a connection URL for the database db, as the superuser.
func (s *Postgres) URL(db string) string {
	return "postgres://" + s.User + "@" + s.Addr + "/" + db + "?sslmode=disable"
}

// SocketURL is a connection URL for the database db, as the superuser,
// over the server's Unix socket.
func (s *Postgres) SocketURL(db string) string {
	_, port, _ := net.SplitHostPort(s.Addr)
	return "postgres://" + s.User + "@/" + db + "?host=" + url.QueryEscape(s.c.Dir) + "&port=" + port + "&sslmode=disable"
}

// Stop shuts the server down fast (SIGINT), ending every connection, and
// kills it and its backends after 5 s.
func (s *Postgres) Stop() {
	if s.proc == nil || !s.proc.Running() {
		return
	}
	s.proc.Signal(syscall.SIGINT)
	select {
	case <-s.proc.Exited():
	case <-time.After(5 * time.Second):
		// Its backends each run in a session of their own, out of reach
		// of a signal to its process group.
		out, _ := exec.Command("pgrep", "-P", strconv.Itoa(s.proc.cmd.Process.Pid)).Output()
		for _, f := range strings.Fields(string(out)) {
			if pid, err := strconv.Atoi(f); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		s.proc.Kill(5 * time.Second)
	}
}

// Close stops the server and removes its folder.
func (s *Postgres) Close() {
	s.Stop()
	os.RemoveAll(s.c.Dir)
}
