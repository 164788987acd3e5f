package wallet_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet"
)

// hangGuard is how long a failing connect may take before a test calls it
// a hang: twice the bound the code promises, plus room for a busy machine.
const hangGuard = 2*wallet.ConnectTimeout + 4*time.Second

// secret returns a random password that no error message could contain by
// chance.
func secret(t *testing.T) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	return "pw" + hex.EncodeToString(b)
}

// assertOneLine fails unless msg is one line that contains every want and
// none of the secrets.
func assertOneLine(t *testing.T, msg string, want []string, secrets ...string) {
	t.Helper()
	if strings.Contains(strings.TrimSuffix(msg, "\n"), "\n") {
		t.Errorf("message is more than one line:\n%s", msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("message %q does not mention %q", msg, w)
		}
	}
	for _, s := range secrets {
		if s != "" && strings.Contains(msg, s) {
			t.Errorf("message %q gives away the secret %q", msg, s)
		}
	}
}

func TestRedisOptions(t *testing.T) {
	tests := []struct {
		name     string
		url      string
		addr     string
		wantAddr string
		wantUser string
		wantPass string
		wantDB   int
	}{
		{name: "defaults", wantAddr: wallet.DefaultRedisAddr},
		{name: "REDIS_ADDR", addr: "10.0.0.5:7000", wantAddr: "10.0.0.5:7000"},
		{name: "REDIS_URL wins over REDIS_ADDR", url: "redis://127.0.0.1:6380", addr: "10.0.0.5:7000", wantAddr: "127.0.0.1:6380"},
		{name: "REDIS_URL with password and db", url: "redis://:s3cret@db.example:6390/2", wantAddr: "db.example:6390", wantPass: "s3cret", wantDB: 2},
		{name: "REDIS_URL with user", url: "rediss://app:s3cret@db.example/1", wantAddr: "db.example:6379", wantUser: "app", wantPass: "s3cret", wantDB: 1},
		{name: "password with a percent-encoded slash", url: "redis://:a%2Fb@localhost:6379", wantAddr: "localhost:6379", wantPass: "a/b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			opt, err := wallet.RedisOptions()
			if err != nil {
				t.Fatalf("RedisOptions: %v", err)
			}
			if opt.Addr != tt.wantAddr || opt.Username != tt.wantUser || opt.Password != tt.wantPass || opt.DB != tt.wantDB {
				t.Errorf("got addr %q user %q password %q db %d; want %q %q %q %d",
					opt.Addr, opt.Username, opt.Password, opt.DB, tt.wantAddr, tt.wantUser, tt.wantPass, tt.wantDB)
			}
			// Connect must give up on its own, not wait for the caller.
			if !opt.ContextTimeoutEnabled || opt.DialTimeout <= 0 || opt.DialTimeout > wallet.ConnectTimeout {
				t.Errorf("ContextTimeoutEnabled %v, DialTimeout %v: connects are not bounded",
					opt.ContextTimeoutEnabled, opt.DialTimeout)
			}
		})
	}
}

func TestRedisOptions_badConfig(t *testing.T) {
	tests := []struct {
		name   string
		url    string
		addr   string
		secret string // must not appear in the error
		want   string // must appear in the error
	}{
		{name: "bad port", url: "redis://:hunter2@localhost:sixty/0", secret: "hunter2", want: "REDIS_URL"},
		{name: "bad database", url: "redis://:hunter2@localhost:6379/zero", secret: "hunter2", want: "REDIS_URL"},
		{name: "unknown option", url: "redis://:hunter2@localhost:6379/0?colour=red", secret: "hunter2", want: "REDIS_URL"},
		{name: "wrong scheme", url: "http://:hunter2@localhost:6379", secret: "hunter2", want: "redis://"},
		{name: "no scheme", url: "localhost:6379", want: "redis://"},
		// Unencoded / ? # % in a password make the URL split in the wrong
		// place; the error must not quote the pieces.
		{name: "slash in the password", url: "redis://app:123/hunter2@localhost:6379", secret: "hunter2", want: "REDIS_URL"},
		{name: "hash in the password", url: "redis://app:hunter#2x@localhost:6379", secret: "hunter", want: "REDIS_URL"},
		{name: "bad escape in the password", url: "redis://app:hunter2%zz@localhost:6379", secret: "%zz", want: "REDIS_URL"},
		{name: "REDIS_ADDR without a port", addr: "localhost", want: "REDIS_ADDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			opt, err := wallet.RedisOptions()
			if err == nil {
				t.Fatalf("RedisOptions accepted %q (addr %q)", tt.url, opt.Addr)
			}
			assertOneLine(t, err.Error(), []string{tt.want}, tt.secret)
			// Connect reports the same problem without dialling.
			_, cerr := wallet.Connect(context.Background())
			if cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Connect = %v, want %v", cerr, err)
			}
		})
	}
}

func TestConnect_unreachable(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	start := time.Now()
	rdb, err := wallet.Connect(context.Background())
	if err == nil {
		rdb.Close()
		t.Fatal("Connect to 127.0.0.1:1 succeeded")
	}
	if took := time.Since(start); took > hangGuard {
		t.Errorf("Connect took %v to fail", took)
	}
	assertOneLine(t, err.Error(), []string{"127.0.0.1:1", "make up"})
}

// redisServer starts a private redis-server that requires password and
// returns its address; it is killed when the test ends.
func redisServer(t *testing.T, password string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("redis-server is not on PATH, and CI is set")
		}
		t.Skip("redis-server is not on PATH; install it (apt-get install redis-server) to run this test")
	}
	// A free port can be taken between asking and binding: try a few.
	var lastErr error
	for range 3 {
		addr, err := tryRedisServer(t, bin, password)
		if err == nil {
			return addr
		}
		lastErr = err
	}
	t.Fatalf("could not start redis-server: %v", lastErr)
	return ""
}

func tryRedisServer(t *testing.T, bin, password string) (string, error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	l.Close()
	_, port, _ := net.SplitHostPort(addr)

	var out bytes.Buffer
	cmd := exec.Command(bin, "--requirepass", password, "--port", port, "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir())
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		cmd.Process.Kill()
		<-exited
	}

	// Wait, bounded, until it answers: any reply (NOAUTH included) will do.
	deadline := time.Now().Add(10 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.SetDeadline(time.Now().Add(time.Second))
			_, err = conn.Write([]byte("PING\r\n"))
			if err == nil {
				_, err = conn.Read(make([]byte, 64))
			}
			conn.Close()
			if err == nil {
				break
			}
		}
		select {
		case <-exited:
			return "", &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out.Bytes()}
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", &net.OpError{Op: "wait for", Net: "tcp", Addr: l.Addr(), Err: err}
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", out.String())
		}
	})
	return addr, nil
}

func TestConnect_requirePass(t *testing.T) {
	password := secret(t)
	addr := redisServer(t, password)
	wrong := secret(t)
	tests := []struct {
		name string
		url  string
		addr string
		ok   bool
	}{
		{name: "right password", url: "redis://:" + password + "@" + addr + "/0", ok: true},
		{name: "right password, default user", url: "redis://default:" + url.PathEscape(password) + "@" + addr, ok: true},
		{name: "wrong password", url: "redis://:" + wrong + "@" + addr + "/0"},
		{name: "no password", addr: addr},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			ctx := context.Background()
			start := time.Now()
			rdb, err := wallet.Connect(ctx)
			if tt.ok {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				defer rdb.Close()
				if err := rdb.Set(ctx, "walletlock:probe", "1", time.Minute).Err(); err != nil {
					t.Errorf("SET on an authenticated client: %v", err)
				}
				return
			}
			if err == nil {
				rdb.Close()
				t.Fatal("Connect succeeded without the right password")
			}
			if took := time.Since(start); took > hangGuard {
				t.Errorf("Connect took %v to fail", took)
			}
			assertOneLine(t, err.Error(), []string{addr, "credentials"}, password, wrong)
		})
	}
}

func TestDatabaseURL(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	if got := wallet.DatabaseURL(); got != wallet.DefaultDatabaseURL {
		t.Errorf("DatabaseURL() = %q with DATABASE_URL unset, want the default", got)
	}
	const u = "postgres://a:b@db.example:5433/x"
	t.Setenv("DATABASE_URL", u)
	if got := wallet.DatabaseURL(); got != u {
		t.Errorf("DatabaseURL() = %q, want %q", got, u)
	}
}

func TestConnectPostgres_badURL(t *testing.T) {
	tests := []struct {
		name   string
		url    string
		secret string
	}{
		{"bad port", "postgres://walletlock:hunter2@localhost:sixty/walletlock", "hunter2"},
		{"bad escape in the password", "postgres://walletlock:hunter2%zz@localhost:5432/walletlock", "hunter2"},
		{"unknown sslmode", "postgres://walletlock:hunter2@localhost:5432/walletlock?sslmode=sometimes", "hunter2"},
		{"slash in the password", "postgres://walletlock:123/hunter2@localhost:5432/walletlock", "hunter2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", tt.url)
			pool, err := wallet.ConnectPostgres(context.Background())
			if err == nil {
				pool.Close()
				t.Fatalf("ConnectPostgres accepted %q", tt.url)
			}
			assertOneLine(t, err.Error(), []string{"DATABASE_URL"}, tt.secret)
		})
	}
}

func TestConnectPostgres_unreachable(t *testing.T) {
	password := secret(t)
	t.Setenv("DATABASE_URL", "postgres://walletlock:"+password+"@127.0.0.1:1/walletlock?sslmode=disable")
	start := time.Now()
	pool, err := wallet.ConnectPostgres(context.Background())
	if err == nil {
		pool.Close()
		t.Fatal("ConnectPostgres to 127.0.0.1:1 succeeded")
	}
	if took := time.Since(start); took > hangGuard {
		t.Errorf("ConnectPostgres took %v to fail", took)
	}
	assertOneLine(t, err.Error(), []string{"127.0.0.1:1", "make up"}, password)
}

func TestConnectPostgres_wrongPassword(t *testing.T) {
	testenv.Postgres(t) // skips, or fails under CI, when PostgreSQL is down
	u, err := url.Parse(wallet.DatabaseURL())
	if err != nil || u.User == nil || u.Host == "" {
		t.Skip("DATABASE_URL is not a postgres:// URL with a user; cannot swap its password")
	}
	// The default password is also the user and database name, which the
	// message may name; only a password that differs from both can be
	// looked for.
	password, _ := u.User.Password()
	if password == u.User.Username() || password == strings.TrimPrefix(u.Path, "/") {
		password = ""
	}
	wrong := secret(t)
	u.User = url.UserPassword(u.User.Username(), wrong)
	t.Setenv("DATABASE_URL", u.String())

	pool, err := wallet.ConnectPostgres(context.Background())
	if err == nil {
		pool.Close()
		t.Fatal("ConnectPostgres succeeded with a wrong password")
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	assertOneLine(t, err.Error(), []string{net.JoinHostPort(u.Hostname(), port), "credentials", "DATABASE_URL"}, password, wrong)
}
