// Package testenv is what the root's tests share: the Redis and the
// PostgreSQL the environment names, a key prefix of each test's own that
// is emptied when the test ends, and the step program of the package
// under test, built once. Without a service a test skips, saying how to
// start it; with CI set it fails instead, so that CI cannot pass by
// skipping.
package testenv

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

// Missing skips t, or fails it under CI, for want of a service (or of a
// server program a test starts on its own, err says which).
func Missing(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%v (CI is set, so this fails instead of skipping)", err)
	}
	t.Skipf("%v; `make up` starts Redis and PostgreSQL", err)
}

// Redis is a client for the Redis of the environment, closed when t ends.
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb, err := wallet.Connect(t.Context())
	if err != nil {
		Missing(t, err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Postgres is a pool for the PostgreSQL of the environment.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.Connect(t.Context())
	if err != nil {
		Missing(t, err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// RedisServer starts a redis-server of t's own on a free port, with args
// added to its command line and nothing saved to disk, and returns its
// address once it answers; it is stopped when t ends. For a server a test
// sets up as the shared one is not (with a password, say).
func RedisServer(t testing.TB, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(t, err)
	}
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := free.Addr().String()
	free.Close()
	_, port, _ := net.SplitHostPort(addr)
	args = append([]string{"--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, args...)
	server := exec.Command(bin, args...)
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Process.Kill(); server.Wait() })
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("the redis-server of the test does not answer at %s", addr)
		}
	}
}

// Refused checks the error of a Connect that must fail: one line that
// says each of says, and no piece of the tests' passwords, which are
// written s3cr... or ...tPass.
func Refused(t testing.TB, err error, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatal("Connect succeeded")
	}
	msg := err.Error()
	for _, part := range says {
		if !strings.Contains(msg, part) {
			t.Errorf("error %q does not say %q", msg, part)
		}
	}
	if strings.Contains(msg, "s3cr") || strings.Contains(msg, "tPass") || strings.Contains(msg, "\n") {
		t.Errorf("error %q shows a piece of the password, or takes more than one line", msg)
	}
}

// Prefix is "test:<name>:<random>:", a key prefix of t's own: every key
// under it is deleted when t ends, on every node of a cluster.
func Prefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	name := regexp.MustCompile(`[^\w]+`).ReplaceAllString(t.Name(), "-")
	prefix := fmt.Sprintf("test:%s:%s:", name, rand.Text()[:8])
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		del := func(ctx context.Context, node *redis.Client) error {
			iter := node.Scan(ctx, 0, prefix+"*", 1000).Iterator()
			for iter.Next(ctx) {
				if err := node.Del(ctx, iter.Val()).Err(); err != nil {
					return err
				}
			}
			return iter.Err()
		}
		var err error
		if cluster, ok := rdb.(*redis.ClusterClient); ok {
			err = cluster.ForEachMaster(ctx, del)
		} else {
			err = del(ctx, rdb.(*redis.Client))
		}
		if err != nil {
			t.Errorf("delete the keys under %s: %v", prefix, err)
		}
	})
	return prefix
}

// Bin is the step program of the package under test, once Main built it.
var Bin string

// Main builds the package under test into a temporary folder (Bin), runs
// the tests, removes the folder and exits.
func Main(m *testing.M) {
	dir, err := os.MkdirTemp("", "walletlock-test-")
	if err == nil {
		Bin = filepath.Join(dir, "step")
		build := exec.Command("go", "build", "-o", Bin, ".")
		build.Stderr = os.Stderr
		err = build.Run()
	}
	code := 1
	if err == nil {
		code = m.Run()
	} else {
		fmt.Fprintln(os.Stderr, "testenv: build the step:", err)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// Ran is what a run of Bin printed, and its exit code.
type Ran struct {
	Stdout, Stderr string
	Code           int
}

// Started is a run of Bin under way.
type Started struct {
	Cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
}

// Start starts Bin with args; it is killed if t ends first.
func Start(t testing.TB, args ...string) *Started {
	t.Helper()
	s := &Started{Cmd: exec.CommandContext(t.Context(), Bin, args...)}
	s.Cmd.Stdout, s.Cmd.Stderr = &s.stdout, &s.stderr
	if err := s.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", filepath.Base(Bin), err)
	}
	return s
}

// Wait waits for the run to end.
func (s *Started) Wait(t testing.TB) Ran {
	t.Helper()
	var exit *exec.ExitError
	if err := s.Cmd.Wait(); err != nil && !errors.As(err, &exit) {
		t.Fatalf("run %s: %v", filepath.Base(Bin), err)
	}
	return Ran{s.stdout.String(), s.stderr.String(), s.Cmd.ProcessState.ExitCode()}
}

// Run runs Bin with args to its end.
func Run(t testing.TB, args ...string) Ran {
	t.Helper()
	return Start(t, args...).Wait(t)
}
