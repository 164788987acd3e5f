//go:build unix

package testenv

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PostgresServer is a PostgreSQL of the test's own, on a free loopback
// port, for a test that breaks its server: freezes it (SIGSTOP), stops or
// restarts it. It never touches the shared PostgreSQL. It trusts local
// connections: its URL has no password.
type PostgresServer struct {
	Addr string // host:port
	URL  string // a DATABASE_URL for its database walletlock

	t    testing.TB
	args []string // the postgres command line, to start it again
	cred *syscall.Credential
	cmd  *exec.Cmd
	log  bytes.Buffer
}

// StartPostgres initialises a cluster in a temporary directory, with a
// superuser walletlock and a database walletlock, starts it, and stops it
// when the test ends. initdb and postgres refuse to run as root: a test
// running as root runs them as the user postgres. Without the binaries the
// test skips, or fails when CI is set.
func StartPostgres(t testing.TB) *PostgresServer {
	t.Helper()
	initdb, err := pgBinary("initdb")
	if err != nil {
		unavailable(t, "PostgreSQL's initdb", err)
	}
	postgres, err := pgBinary("postgres")
	if err != nil {
		unavailable(t, "PostgreSQL's postgres", err)
	}
	s := &PostgresServer{t: t, Addr: freeAddr(t)}
	// Not t.TempDir: its parents are closed to the user postgres.
	dir, err := os.MkdirTemp("", "walletlock-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			unavailable(t, "a user postgres to run PostgreSQL as (root may not)", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		s.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(initdb, "-D", data, "-U", "walletlock", "--auth=trust", "--no-sync", "-E", "UTF8")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	cmd.Dir = dir // one the user postgres can enter, unlike a clone inside a 0700 folder
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("testenv: initdb: %v\n%s", err, out)
	}
	_, port, _ := strings.Cut(s.Addr, ":")
	s.args = []string{postgres, "-D", data, "-p", port, "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"}
	s.URL = "postgres://walletlock@" + s.Addr + "/walletlock?sslmode=disable"
	s.Start()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("postgres output:\n%s", s.log.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.admin())
	if err != nil {
		t.Fatalf("testenv: own PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE walletlock"); err != nil {
		t.Fatalf("testenv: own PostgreSQL: CREATE DATABASE: %v", err)
	}
	return s
}

func (s *PostgresServer) admin() string {
	return "postgres://walletlock@" + s.Addr + "/postgres?sslmode=disable"
}

// Use points the programs and testenv.Postgres at this server for the
// rest of the test (DATABASE_URL), and returns a pool for it, as
// RedisServer.Use returns a client.
func (s *PostgresServer) Use(t testing.TB) *pgxpool.Pool {
	t.Helper()
	t.Setenv("DATABASE_URL", s.URL)
	return Postgres(t)
}

// Freeze stops the server and every backend with SIGSTOP: connections
// stay open and nothing answers. It is thawed when the test ends, or by
// Thaw.
func (s *PostgresServer) Freeze(t testing.TB) {
	t.Helper()
	s.signal(syscall.SIGSTOP, s.cmd.Process.Pid) // first, so that it forks no more
	s.signal(syscall.SIGSTOP, s.children()...)
	t.Cleanup(s.Thaw)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *PostgresServer) Thaw() {
	s.signal(syscall.SIGCONT, s.children()...)
	s.signal(syscall.SIGCONT, s.cmd.Process.Pid)
}

// Stop shuts the server down fast, ending every connection; Start brings
// it back on the same port and waits until it answers.
func (s *PostgresServer) Stop() {
	if s.cmd == nil || s.cmd.ProcessState != nil {
		return
	}
	s.Thaw()
	s.cmd.Process.Signal(syscall.SIGINT)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		s.signal(syscall.SIGKILL, s.children()...)
		s.cmd.Process.Kill()
		<-done
	}
}

// Start starts a stopped server again; see Stop.
func (s *PostgresServer) Start() {
	s.t.Helper()
	s.cmd = exec.Command(s.args[0], s.args[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = &s.log, &s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	s.cmd.Dir = "/" // see initdb's
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("testenv: start postgres: %v", err)
	}
	for deadline := time.Now().Add(20 * time.Second); ; {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		conn, err := pgx.Connect(ctx, s.admin())
		if err == nil {
			conn.Close(ctx)
		}
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.Stop()
			s.t.Fatalf("testenv: postgres at %s did not answer within 20s: %v\n%s", s.Addr, err, s.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *PostgresServer) signal(sig syscall.Signal, pids ...int) {
	for _, pid := range pids {
		syscall.Kill(pid, sig)
	}
}

// children returns the postmaster's child processes: its backends, each
// in a session of its own, out of reach of a signal to a process group.
func (s *PostgresServer) children() []int {
	out, _ := exec.Command("pgrep", "-P", strconv.Itoa(s.cmd.Process.Pid)).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// pgBinary finds a PostgreSQL program on PATH or in Debian's versioned
// directories.
func pgBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", errors.New("not on PATH (apt-get install postgresql, or brew install postgresql)")
}

// freeAddr returns a loopback address whose port nothing listens on now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("testenv: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}
