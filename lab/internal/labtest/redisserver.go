package labtest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/launch"
)

// RedisServer is a redis-server of the test's own, on a free loopback
// port, for a test that breaks its server: freezes, kills or restarts it,
// gives it a password.
type RedisServer struct {
	Addr string
	t    testing.TB
	srv  *launch.Redis
}

// StartRedis starts a redis-server with args added to its command line
// (such as "--requirepass", "secret"), waits until it answers, and stops it
// when the test ends. Without a redis-server binary the test skips, or
// fails when CI is set.
func StartRedis(t testing.TB, args ...string) *RedisServer {
	t.Helper()
	return tie(t, func(ctx context.Context, g *launch.Group) (*launch.Redis, error) {
		return g.StartRedis(ctx, t.TempDir(), args...)
	})
}

// StartTLSRedis is StartRedis for a redis-server that speaks TLS only,
// with the certificate (its CA too) and key in the named files.
func StartTLSRedis(t testing.TB, certFile, keyFile string, args ...string) *RedisServer {
	t.Helper()
	return tie(t, func(ctx context.Context, g *launch.Group) (*launch.Redis, error) {
		return g.StartTLSRedis(ctx, t.TempDir(), certFile, keyFile, args...)
	})
}

// tie starts a server with start, in a launch.Group whose processes are
// killed when the test ends, and logs what the server wrote if the test
// failed.
func tie(t testing.TB, start func(context.Context, *launch.Group) (*launch.Redis, error)) *RedisServer {
	t.Helper()
	if _, err := launch.RedisBinary(); err != nil {
		testenv.Missing(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := start(ctx, group(t))
	if err != nil {
		t.Fatalf("labtest: %v", err)
	}
	logOnFailure(t, srv.Log)
	return &RedisServer{Addr: srv.Addr, t: t, srv: srv}
}

// group returns a launch.Group whose processes are killed when the test
// ends.
func group(t testing.TB) *launch.Group {
	g := new(launch.Group)
	t.Cleanup(func() {
		if left := g.KillAll(10 * time.Second); len(left) > 0 {
			t.Errorf("labtest: still running 10s after SIGKILL: %v", left)
		}
	})
	return g
}

// logOnFailure logs what a server wrote, when the test has failed.
func logOnFailure(t testing.TB, log *launch.Log) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server output:\n%s", log.String())
		}
	})
}

// Use points the programs and labtest.Redis at this server for the rest of
// the test (REDIS_ADDR, and no REDIS_URL), and returns a client for it.
func (s *RedisServer) Use(t testing.TB) *redis.Client {
	t.Helper()
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", s.Addr)
	return testenv.Redis(t).(*redis.Client) // one address: one server
}

// Client returns a client of this server alone, closed when the test
// ends, without touching the environment (so a parallel test may call
// it).
func (s *RedisServer) Client(t testing.TB) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Freeze stops the server with SIGSTOP: it keeps its connections and
// answers nothing. It is thawed when the test ends, or by Thaw.
func (s *RedisServer) Freeze(t testing.TB) {
	t.Helper()
	if err := s.srv.Proc().Pause(); err != nil {
		t.Skipf("labtest: cannot freeze redis-server here: %v", err)
	}
	t.Cleanup(s.Thaw)
}

// Thaw resumes a frozen server (SIGCONT).
func (s *RedisServer) Thaw() { s.srv.Proc().Resume() }

// Kill kills the server with SIGKILL, as kill -9 does: no shutdown, no
// last write. Start brings it back.
func (s *RedisServer) Kill() { s.srv.Proc().Kill(5 * time.Second) }

// Start starts a killed server again on the same port, empty, and waits
// until it answers; the test fails if it does not.
func (s *RedisServer) Start(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.srv.Start(ctx); err != nil {
		t.Fatalf("labtest: start redis-server again: %v", err)
	}
}

// Restart kills the server and starts it again on the same port, empty.
func (s *RedisServer) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	s.Start(t)
}

// DeadAddr is a loopback address where nothing listens.
func DeadAddr(t testing.TB) string {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return "127.0.0.1:" + strconv.Itoa(port)
}
