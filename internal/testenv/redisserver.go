package testenv

import (
	"bytes"
	"fmt"
	"net"
	"os/exec"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/services"
)

// RedisServer is a redis-server of the test's own, on a free loopback
// port, for a test that breaks its server: freezes it (SIGSTOP), kills it,
// gives it a password. It never touches the shared Redis.
type RedisServer struct {
	Addr string
	cmd  *exec.Cmd
}

// StartRedis starts a redis-server with args added to its command line
// (such as "--requirepass", "secret"), waits until it answers, and stops it
// when the test ends. Without a redis-server binary the test skips, or
// fails when CI is set.
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		unavailable(t, "redis-server", fmt.Errorf("not on PATH (apt-get install redis-server, or brew install redis)"))
	}
	// A free port can be taken between asking and binding: try a few.
	for range 3 {
		if s, err := startRedis(t, bin, args); err == nil {
			return s
		} else if err != errPortTaken {
			t.Fatal(err)
		}
	}
	t.Fatal("testenv: could not find a free port for redis-server")
	return nil
}

var errPortTaken = fmt.Errorf("port taken")

func startRedis(t testing.TB, bin string, args []string) (*RedisServer, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)

	var out bytes.Buffer
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir()}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("testenv: start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		thaw(cmd.Process) // a frozen server cannot die
		cmd.Process.Kill()
		<-exited
	}
	// Wait, bounded, until it answers; any reply (NOAUTH too) will do.
	for deadline := time.Now().Add(10 * time.Second); ; {
		select {
		case <-exited:
			if bytes.Contains(out.Bytes(), []byte("Address already in use")) {
				return nil, errPortTaken
			}
			return nil, fmt.Errorf("testenv: redis-server exited at start:\n%s", out.String())
		default:
		}
		if services.Answers(addr) {
			break
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("testenv: redis-server at %s did not answer within 10s:\n%s", addr, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", out.String())
		}
	})
	return &RedisServer{Addr: addr, cmd: cmd}, nil
}

// Use points the programs and testenv.Redis at this server for the rest of
// the test (REDIS_ADDR, and no REDIS_URL), and returns a client for it.
func (s *RedisServer) Use(t testing.TB) *redis.Client {
	t.Helper()
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", s.Addr)
	return Redis(t).(*redis.Client) // one address: one server
}

// Freeze stops the server with SIGSTOP: it keeps its connections and
// answers nothing, as a server stalled by the machine would. It is thawed
// when the test ends, or by Thaw.
func (s *RedisServer) Freeze(t testing.TB) {
	t.Helper()
	if err := freeze(s.cmd.Process); err != nil {
		t.Skipf("testenv: cannot freeze redis-server here: %v", err)
	}
	t.Cleanup(s.Thaw)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *RedisServer) Thaw() { thaw(s.cmd.Process) }
