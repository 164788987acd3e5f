package testenv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
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
	"github.com/redis/go-redis/v9"
)

// Own is a Redis or PostgreSQL server that a test started for itself on a
// free loopback port, so that it can freeze, restart or stop it without
// disturbing anyone. It is stopped, and its data deleted, when the test
// ends.
type Own struct {
	Addr string // host:port
	// URL is what reaches it: a DATABASE_URL for PostgreSQL (no password:
	// it trusts local connections), empty for Redis (use Addr).
	URL string

	t     testing.TB
	args  []string // how to start it again
	cred  *syscall.Credential
	cmd   *exec.Cmd
	log   *bytes.Buffer
	ready func(ctx context.Context) error
}

// OwnRedis starts a redis-server without persistence. Without the binary
// the test skips (fails under CI), saying how to install it.
func OwnRedis(t testing.TB) *Own {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server (apt-get install redis-server, or brew install redis)", err)
	}
	s := &Own{t: t, Addr: freeAddr(t)}
	_, port, _ := net.SplitHostPort(s.Addr)
	s.args = []string{bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	s.ready = func(ctx context.Context) error {
		rdb := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	}
	s.start()
	t.Cleanup(s.stop)
	return s
}

// OwnPostgres initialises a PostgreSQL cluster in a temporary directory
// and starts it, with a superuser walletlock, trusted, and a database
// walletlock. initdb and postgres refuse to run as root; a root test runs
// them as the user postgres. Without the binaries the test skips (fails
// under CI).
func OwnPostgres(t testing.TB) *Own {
	t.Helper()
	initdb, err := pgBinary("initdb")
	if err != nil {
		unavailable(t, "PostgreSQL's initdb", err)
	}
	postgres, err := pgBinary("postgres")
	if err != nil {
		unavailable(t, "PostgreSQL's postgres", err)
	}
	s := &Own{t: t, Addr: freeAddr(t)}
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
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	_, port, _ := net.SplitHostPort(s.Addr)
	s.args = []string{postgres, "-D", data, "-p", port, "-k", dir, "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"}
	s.URL = "postgres://walletlock@" + s.Addr + "/walletlock?sslmode=disable"
	admin := "postgres://walletlock@" + s.Addr + "/postgres?sslmode=disable"
	s.ready = func(ctx context.Context) error {
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}
	s.start()
	t.Cleanup(s.stop)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatalf("own PostgreSQL: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE walletlock"); err != nil {
		t.Fatalf("own PostgreSQL: CREATE DATABASE: %v", err)
	}
	return s
}

// Freeze stops every process of the server with SIGSTOP: connections stay
// open and nothing answers, as with a hung machine. Thaw, or the end of
// the test, resumes it.
func (s *Own) Freeze() {
	s.t.Helper()
	s.signal(s.cmd.Process.Pid, syscall.SIGSTOP) // first, so that it forks no more
	for _, pid := range s.children() {
		s.signal(pid, syscall.SIGSTOP)
	}
}

// Thaw resumes a frozen server.
func (s *Own) Thaw() {
	s.t.Helper()
	for _, pid := range s.children() {
		s.signal(pid, syscall.SIGCONT)
	}
	s.signal(s.cmd.Process.Pid, syscall.SIGCONT)
}

// Restart stops the server (without saving: Redis comes back empty) and
// starts it again on the same port, waiting until it answers.
func (s *Own) Restart() {
	s.t.Helper()
	s.Stop()
	s.Start()
}

// Stop ends the server (PostgreSQL with a fast shutdown, which ends every
// connection); Start brings it back on the same port.
func (s *Own) Stop() { s.stop() }

// Start starts a stopped server again and waits until it answers.
func (s *Own) Start() {
	s.t.Helper()
	s.start()
}

func (s *Own) signal(pid int, sig syscall.Signal) {
	s.t.Helper()
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		s.t.Fatalf("signal %v to %s: %v", sig, s, err)
	}
}

// children returns the server's child processes: PostgreSQL's backends,
// each in a session of its own, so that a signal to the process group
// would miss them.
func (s *Own) children() []int {
	s.t.Helper()
	out, err := exec.Command("pgrep", "-P", strconv.Itoa(s.cmd.Process.Pid)).Output()
	var exit *exec.ExitError
	if err != nil && !(errors.As(err, &exit) && exit.ExitCode() == 1) { // 1: none
		s.t.Fatalf("pgrep: %v", err)
	}
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func (s *Own) start() {
	s.t.Helper()
	s.log = new(bytes.Buffer)
	s.cmd = exec.Command(s.args[0], s.args[1:]...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	if err := s.cmd.Start(); err != nil {
		s.t.Fatalf("start %s: %v", s.args[0], err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := s.ready(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			s.stop()
			s.t.Fatalf("%s on %s did not answer within 20s: %v\n%s", filepath.Base(s.args[0]), s.Addr, err, s.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop resumes the server if frozen and ends it: SIGINT asks PostgreSQL
// for a fast shutdown; SIGKILL follows if it takes more than 5 s.
func (s *Own) stop() {
	if s.cmd == nil || s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	s.Thaw()
	pid := s.cmd.Process.Pid
	syscall.Kill(pid, syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		for _, child := range s.children() {
			syscall.Kill(child, syscall.SIGKILL)
		}
		syscall.Kill(pid, syscall.SIGKILL)
		<-done
	}
}

// freeAddr returns a loopback address with a port that nothing listens on
// right now.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// pgBinary finds a PostgreSQL program on PATH or in Debian's versioned
// directories.
func pgBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", errors.New(name + " not found: apt-get install postgresql (or brew install postgresql)")
}

// String names the server for messages.
func (s *Own) String() string { return fmt.Sprintf("%s on %s", filepath.Base(s.args[0]), s.Addr) }

// NoSecret fails the test if output holds any part of secret four bytes
// long or more: a password cut at an unescaped @ or : must not show its
// tail either.
func NoSecret(t testing.TB, output, secret string) {
	t.Helper()
	if frag := secretPart(output, secret); frag != "" {
		t.Errorf("the output shows %q, part of the password:\n%s", frag, output)
	}
}

// NoSecretBeyond is NoSecret for a program that prints description, a
// package's account of a URL: the program itself must add no part of
// secret. The description is the package's to keep clean (package wallet
// tests its own); when it is not, this only logs it, so that a program's
// test holds the program to its part.
func NoSecretBeyond(t testing.TB, output, description, secret string) {
	t.Helper()
	NoSecret(t, strings.ReplaceAll(output, description, ""), secret)
	if frag := secretPart(description, secret); frag != "" {
		t.Logf("the description %q shows %q, part of the password: a bug in the package that wrote it", description, frag)
	}
}

func secretPart(output, secret string) string {
	for i := 0; i+4 <= len(secret); i++ {
		if frag := secret[i : i+4]; strings.Contains(output, frag) {
			return frag
		}
	}
	return ""
}
