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
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"example.com/walletlock/internal/safe"
)

// Postgres is a PostgreSQL of ours: a cluster initialised in a temporary
// folder of its own, trusting local connections (its URLs carry no
// password), listening on a free loopback port.
type Postgres struct {
	Addr string // 127.0.0.1:port
	User string // its superuser
	Log  *Log   // what the server wrote, across restarts

	dir  string   // data, socket and working directory, removed by Close
	args []string // the postgres command line, to start it again
	cred *syscall.Credential
	proc *Proc
	g    *Group
}

// StartPostgres initialises a cluster with the superuser user, starts it
// and waits until it accepts connections. initdb and postgres refuse to
// run as root: as root they run as the user postgres, from a folder that
// user owns. Close stops it and removes its folder.
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
	initdb, err := PostgresBinary("initdb")
	if err != nil {
		return nil, err
	}
	postgres, err := PostgresBinary("postgres")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("launch: find a free port: %w", err)
	}
	s := &Postgres{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), User: user, Log: &Log{}, g: g}
	// Not under the caller's temporary folder: its parents may be closed
	// to the user postgres.
	if s.dir, err = os.MkdirTemp("", "walletlock-pg-"); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	if s.cred, err = postgresUser(s.dir); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	data := filepath.Join(s.dir, "data")
	cmd := exec.CommandContext(ctx, initdb, append([]string{"-D", data, "-U", user, "--no-sync", "-E", "UTF8"}, auth...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = s.dir
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(s.dir)
		return nil, fmt.Errorf("launch: initdb: %v: %s", err, safe.Line(string(out)))
	}
	s.args = []string{postgres, "-D", data, "-p", strconv.Itoa(port), "-k", s.dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "lc_messages=C"}
	if err := s.Start(ctx); err != nil {
		os.RemoveAll(s.dir)
		return nil, err
	}
	return s, nil
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
	return "postgres://" + s.User + "@/" + db + "?host=" + url.QueryEscape(s.dir) + "&port=" + port + "&sslmode=disable"
}

// Start starts a stopped server again, on the same port, and waits, at
// most 20 s, until it accepts connections.
func (s *Postgres) Start(ctx context.Context) error {
	cmd := exec.Command(s.args[0], s.args[1:]...)
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = s.dir // one the user postgres can enter
	from := s.Log.Len()
	p, err := s.g.Start("postgres "+s.Addr, cmd)
	if err != nil {
		return err
	}
	s.proc = p
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(s.Log.String()[from:], "database system is ready to accept connections") {
		select {
		case <-p.Exited():
			return fmt.Errorf("launch: postgres at %s exited at start: %s", s.Addr, safe.Line(s.Log.String()[from:]))
		case <-ctx.Done():
			s.Stop()
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("launch: postgres at %s did not start within 20s: %s", s.Addr, safe.Line(s.Log.String()[from:]))
		}
	}
	return nil
}

// Stop shuts the server down fast (SIGINT), ending every connection, and
// kills it and its backends after 5 s.
func (s *Postgres) Stop() {
	if s.proc == nil || !s.proc.Running() {
		return
	}
	s.Resume() // a stopped server cannot shut down
	s.proc.Signal(syscall.SIGINT)
	select {
	case <-s.proc.Exited():
	case <-time.After(5 * time.Second):
		signal(syscall.SIGKILL, s.children()...)
		s.proc.Kill(5 * time.Second)
	}
}

// Close stops the server and removes its folder.
func (s *Postgres) Close() {
	s.Stop()
	os.RemoveAll(s.dir)
}

// Pause stops the server and every backend with SIGSTOP: connections
// stay open and nothing answers.
func (s *Postgres) Pause() error {
	if err := s.proc.Pause(); err != nil { // first, so that it forks no more
		return err
	}
	signal(syscall.SIGSTOP, s.children()...)
	return nil
}

// Resume continues a paused server (SIGCONT).
func (s *Postgres) Resume() error {
	signal(syscall.SIGCONT, s.children()...)
	return s.proc.Resume()
}

func signal(sig syscall.Signal, pids ...int) {
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
}

// children returns the server's child processes: its backends, each in a
// session of its own, out of reach of a signal to its process group.
func (s *Postgres) children() []int {
	if !s.proc.Running() {
		return nil
	}
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(s.proc.cmd.Process.Pid)).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
