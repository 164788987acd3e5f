package env_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
)

// hangGuard is how long a failing connect may take before a test calls it
// a hang: twice the bound the code promises, plus room for a busy machine.
const hangGuard = 2*env.ConnectTimeout + 4*time.Second

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
		{name: "defaults", wantAddr: env.DefaultRedisAddr},
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
			opt, err := env.RedisOptions()
			if err != nil {
				t.Fatalf("RedisOptions: %v", err)
			}
			if len(opt.Addrs) != 1 || opt.Addrs[0] != tt.wantAddr || opt.Username != tt.wantUser || opt.Password != tt.wantPass || opt.DB != tt.wantDB {
				t.Errorf("got addr %q user %q password %q db %d; want %q %q %q %d",
					opt.Addrs, opt.Username, opt.Password, opt.DB, tt.wantAddr, tt.wantUser, tt.wantPass, tt.wantDB)
			}
			// Connect must give up on its own, not wait for the caller.
			if !opt.ContextTimeoutEnabled || opt.DialTimeout <= 0 || opt.DialTimeout > env.ConnectTimeout {
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
		{name: "a cluster address without a port", addr: "127.0.0.1:7001,127.0.0.1", want: "REDIS_ADDR"},
		{name: "a cluster URL with a bad addr", url: "redis://:hunter2@localhost:7001?addr=localhost", secret: "hunter2", want: "REDIS_URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			opt, err := env.RedisOptions()
			if err == nil {
				t.Fatalf("RedisOptions accepted %q (addrs %q)", tt.url, opt.Addrs)
			}
			assertOneLine(t, err.Error(), []string{tt.want}, tt.secret)
			// Connect reports the same problem without dialling.
			_, cerr := env.Connect(context.Background())
			if cerr == nil || cerr.Error() != err.Error() {
				t.Errorf("Connect = %v, want %v", cerr, err)
			}
		})
	}
}

// leaks reports the first piece of secret, four characters or more (the
// whole of a shorter one), that msg contains.
func leaks(msg, secret string) (string, bool) {
	const n = 4
	if len(secret) <= n {
		return secret, secret != "" && strings.Contains(msg, secret)
	}
	for i := 0; i+n <= len(secret); i++ {
		if piece := secret[i : i+n]; strings.Contains(msg, piece) {
			return piece, true
		}
	}
	return "", false
}

// URLs that go wrong in every way a user and password can, for both
// variables. Not one piece of the user info may show in the error: a
// parser that splits such a URL in the wrong place is how a password
// ends up printed as a host name.
func TestConnect_neverShowsTheUserInfo(t *testing.T) {
	const unreachable = "127.0.0.1:1"
	tests := []struct {
		name     string
		userinfo string // goes between scheme:// and @host; empty for none
		rest     string // what follows scheme://; {host} is replaced
		secrets  []string
		want     string // in the error
	}{
		{name: "an @ in the password", userinfo: "Quokka:Zq8@Wv3Kx", secrets: []string{"Quokka", "Zq8@Wv3Kx"}, want: "%40"},
		{name: "two @ and a colon in the password", userinfo: "Quokka:Zq8@Wv:3Kx", secrets: []string{"Quokka", "Zq8@Wv:3Kx"}, want: "%40"},
		{name: "an @ in the user", userinfo: "Quokka@Jx4Kp:Zq8Wv3Kx", secrets: []string{"Quokka@Jx4Kp", "Zq8Wv3Kx"}, want: "%40"},
		{name: "a slash in the password", userinfo: "Quokka:Zq8/Wv3Kx", secrets: []string{"Quokka", "Zq8/Wv3Kx"}, want: "%2F"},
		{name: "a question mark in the password", userinfo: "Quokka:Zq8?Wv3Kx", secrets: []string{"Quokka", "Zq8?Wv3Kx"}, want: "%3F"},
		{name: "a hash in the password", userinfo: "Quokka:Zq8#Wv3Kx", secrets: []string{"Quokka", "Zq8#Wv3Kx"}, want: "%23"},
		{name: "a bare percent in the password", userinfo: "Quokka:Zq8%Wv3Kx", secrets: []string{"Quokka", "Zq8%Wv3Kx"}, want: "%25"},
		{name: "a space in the password", userinfo: "Quokka:Zq8 Wv3Kx", secrets: []string{"Quokka", "Zq8 Wv3Kx"}, want: "%20"},
		{name: "a line break in the password", userinfo: "Quokka:Zq8\nWv3Kx", secrets: []string{"Quokka", "Zq8\nWv3Kx"}},
		{name: "brackets in the password", userinfo: "Quokka:[Zq8Wv3Kx]", secrets: []string{"Quokka", "Zq8Wv3Kx"}},
		{name: "a percent-encoded @", userinfo: "Quokka:Zq8%40Wv3Kx", secrets: []string{"Quokka", "Zq8%40Wv3Kx", "Zq8@Wv3Kx"}, want: unreachable},
		{name: "a colon in the password", userinfo: "Quokka:Zq8:Wv3Kx", secrets: []string{"Quokka", "Zq8:Wv3Kx"}, want: unreachable},
		{name: "a password written as the user", userinfo: "Zq8Wv3Kx", secrets: []string{"Zq8Wv3Kx"}, want: unreachable},
		{name: "a password and no host", rest: ":Zq8Wv3Kx", secrets: []string{"Zq8Wv3Kx"}},
		{name: "a user, a password and no host", rest: "Quokka:Zq8Wv3Kx", secrets: []string{"Quokka", "Zq8Wv3Kx"}},
		{name: "a user, a password, a colon and no host", rest: "Quokka:Zq8Wv3Kx:", secrets: []string{"Quokka", "Zq8Wv3Kx"}},
	}
	for _, tt := range tests {
		for _, v := range []struct{ env, scheme, path string }{
			{"REDIS_URL", "redis", "/0"},
			{"REDIS_URL", "rediss", "/0"},
			{"DATABASE_URL", "postgres", "/walletlock?sslmode=disable"},
		} {
			t.Run(tt.name+"/"+v.scheme, func(t *testing.T) {
				raw := v.scheme + "://" + tt.rest
				if tt.rest == "" {
					raw = v.scheme + "://" + tt.userinfo + "@" + unreachable + v.path
				}
				t.Setenv("REDIS_URL", "")
				t.Setenv(v.env, raw)
				var err error
				if v.env == "REDIS_URL" {
					var rdb redis.UniversalClient
					if rdb, err = env.Connect(t.Context()); err == nil {
						rdb.Close()
					}
				} else {
					var pool *pgxpool.Pool
					if pool, err = env.ConnectPostgres(t.Context()); err == nil {
						pool.Close()
					}
				}
				if err == nil {
					t.Fatalf("%s=%q: connected", v.env, raw)
				}
				msg := err.Error()
				assertOneLine(t, msg, []string{tt.want})
				for _, s := range tt.secrets {
					if piece, ok := leaks(msg, s); ok {
						t.Errorf("%s=%q: the error shows %q of the user info: %s", v.env, raw, piece, msg)
					}
				}
			})
		}
	}
}

func TestConnect_unreachable(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	start := time.Now()
	rdb, err := env.Connect(context.Background())
	if err == nil {
		rdb.Close()
		t.Fatal("Connect to 127.0.0.1:1 succeeded")
	}
	if took := time.Since(start); took > hangGuard {
		t.Errorf("Connect took %v to fail", took)
	}
	assertOneLine(t, err.Error(), []string{"127.0.0.1:1", "make up"})
}

// redisConf is how a private redis-server should differ from a plain one.
type redisConf struct {
	password string // --requirepass, when set
	// With a certificate and its key the server speaks TLS only.
	certFile, keyFile string
}

// redisServer starts a private redis-server on a free loopback port and
// returns its address; it is killed when the test ends.
func redisServer(t *testing.T, c redisConf) string {
	t.Helper()
	var args []string
	if c.password != "" {
		args = append(args, "--requirepass", c.password)
	}
	if c.certFile != "" {
		return labtest.StartTLSRedis(t, c.certFile, c.keyFile, args...).Addr
	}
	return labtest.StartRedis(t, args...).Addr
}

func TestConnect_requirePass(t *testing.T) {
	password := secret(t)
	addr := redisServer(t, redisConf{password: password})
	wrong := secret(t)
	tests := []struct {
		name string
		url  string
		addr string
		ok   bool
		want []string // in the error, besides the address
	}{
		{name: "right password", url: "redis://:" + password + "@" + addr + "/0", ok: true},
		{name: "right password, default user", url: "redis://default:" + url.PathEscape(password) + "@" + addr, ok: true},
		{name: "wrong password", url: "redis://:" + wrong + "@" + addr + "/0", want: []string{"credentials", "WRONGPASS"}},
		{name: "a password written as the user", url: "redis://" + password + "@" + addr + "/0", want: []string{"wants a password", "names a user but no password", "redis://:PASSWORD@"}},
		{name: "no password", addr: addr, want: []string{"wants a password", "NOAUTH", "REDIS_URL=redis://:PASSWORD@" + addr + "/0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			ctx := context.Background()
			start := time.Now()
			rdb, err := env.Connect(ctx)
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
			assertOneLine(t, err.Error(), append([]string{addr}, tt.want...), password, wrong)
			if strings.Contains(err.Error(), "make up") {
				t.Errorf("a server that answered is blamed on not running: %v", err)
			}
		})
	}
}

func TestConnect_databaseOutOfRange(t *testing.T) {
	addr := redisServer(t, redisConf{})
	t.Setenv("REDIS_URL", "redis://"+addr+"/99")
	rdb, err := env.Connect(context.Background())
	if err == nil {
		rdb.Close()
		t.Fatal("Connect to database 99 succeeded")
	}
	assertOneLine(t, err.Error(), []string{"redis://" + addr + "/99", "no database 99", "out of range", "REDIS_URL"})
	if strings.Contains(err.Error(), "make up") {
		t.Errorf("a server that answered is blamed on not running: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key into dir.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "walletlock test"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// The scheme says whether to speak TLS; a wrong one must be named as
// such, not as a server that does not run.
func TestConnect_wrongScheme(t *testing.T) {
	plain := redisServer(t, redisConf{})
	cert, key := selfSigned(t)
	withTLS := redisServer(t, redisConf{certFile: cert, keyFile: key})

	t.Run("rediss:// to a server without TLS", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+plain+"/0")
		start := time.Now()
		rdb, err := env.Connect(context.Background())
		if err == nil {
			rdb.Close()
			t.Fatal("Connect succeeded")
		}
		if took := time.Since(start); took > hangGuard {
			t.Errorf("Connect took %v to fail", took)
		}
		assertOneLine(t, err.Error(), []string{"rediss://" + plain + "/0", "TLS handshake failed", "redis://", "scheme"})
		if strings.Contains(err.Error(), "make up") {
			t.Errorf("a wrong scheme is blamed on a server that does not run: %v", err)
		}
	})
	t.Run("rediss:// to a server with TLS", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+withTLS+"/0?skip_verify=true")
		env.WarnTo(t, io.Discard)
		rdb, err := env.Connect(context.Background())
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer rdb.Close()
		if err := rdb.Ping(context.Background()).Err(); err != nil {
			t.Errorf("PING over TLS: %v", err)
		}
	})
	t.Run("redis:// to a server with TLS", func(t *testing.T) {
		t.Setenv("REDIS_URL", "redis://"+withTLS+"/0")
		rdb, err := env.Connect(context.Background())
		if err == nil {
			rdb.Close()
			t.Fatal("Connect succeeded")
		}
		assertOneLine(t, err.Error(), []string{"redis://" + withTLS + "/0", "hung up", "rediss://"})
	})
}

// A self-signed certificate is the usual one on a test server: the error
// must say that it is not trusted and how to trust it, not blame the
// scheme, which is right.
func TestConnect_certificateNotTrusted(t *testing.T) {
	cert, key := selfSigned(t)
	addr := redisServer(t, redisConf{certFile: cert, keyFile: key})
	_, port, _ := net.SplitHostPort(addr)
	ping := func(t *testing.T) {
		t.Helper()
		rdb, err := env.Connect(context.Background())
		if err != nil {
			t.Fatalf("Connect: %v", err)
		}
		defer rdb.Close()
		if err := rdb.Set(context.Background(), "walletlock:probe", "1", time.Second).Err(); err != nil {
			t.Errorf("SET over TLS: %v", err)
		}
	}
	refused := func(t *testing.T, want []string, not ...string) {
		t.Helper()
		rdb, err := env.Connect(context.Background())
		if err == nil {
			rdb.Close()
			t.Fatal("Connect succeeded")
		}
		assertOneLine(t, err.Error(), want)
		for _, n := range not {
			if strings.Contains(err.Error(), n) {
				t.Errorf("message %q mentions %q", err, n)
			}
		}
	}

	t.Run("without a CA file it says the certificate is not trusted", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+addr+"/0")
		t.Setenv("REDIS_CA_FILE", "")
		refused(t, []string{"rediss://" + addr + "/0", "certificate is not trusted", "unknown authority", "REDIS_CA_FILE", "skip_verify=true"}, "scheme", "make up")
	})
	t.Run("REDIS_CA_FILE trusts it", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+addr+"/0")
		t.Setenv("REDIS_CA_FILE", cert)
		ping(t)
	})
	t.Run("a certificate for another host is named as such", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://localhost:"+port+"/0")
		t.Setenv("REDIS_CA_FILE", cert)
		refused(t, []string{"not for this host", "REDIS_URL"}, "scheme")
	})
	t.Run("skip_verify=true connects, with a warning", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+addr+"/0?skip_verify=true")
		t.Setenv("REDIS_CA_FILE", "")
		var warned bytes.Buffer
		env.WarnTo(t, &warned)
		ping(t)
		assertOneLine(t, warned.String(), []string{"warning", "skip_verify=true", "not checked", "REDIS_CA_FILE"})
	})
	t.Run("a missing CA file", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+addr+"/0")
		t.Setenv("REDIS_CA_FILE", filepath.Join(t.TempDir(), "nope.pem"))
		refused(t, []string{"REDIS_CA_FILE", "nope.pem", "no such file"})
	})
	t.Run("a key in place of the certificate", func(t *testing.T) {
		t.Setenv("REDIS_URL", "rediss://"+addr+"/0")
		t.Setenv("REDIS_CA_FILE", key)
		refused(t, []string{"REDIS_CA_FILE", "holds no PEM certificate"})
	})
	t.Run("a CA file without rediss://", func(t *testing.T) {
		t.Setenv("REDIS_URL", "redis://"+addr+"/0")
		t.Setenv("REDIS_CA_FILE", cert)
		refused(t, []string{"REDIS_CA_FILE", "rediss://"})
		t.Setenv("REDIS_URL", "")
		t.Setenv("REDIS_ADDR", addr)
		refused(t, []string{"REDIS_CA_FILE", "rediss://"})
	})
}

func TestDatabaseURL(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	if got := env.DatabaseURL(); got != env.DefaultDatabaseURL {
		t.Errorf("DatabaseURL() = %q with DATABASE_URL unset, want the default", got)
	}
	const u = "postgres://a:b@db.example:5433/x"
	t.Setenv("DATABASE_URL", u)
	if got := env.DatabaseURL(); got != u {
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
			pool, err := env.ConnectPostgres(context.Background())
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
	pool, err := env.ConnectPostgres(context.Background())
	if err == nil {
		pool.Close()
		t.Fatal("ConnectPostgres to 127.0.0.1:1 succeeded")
	}
	if took := time.Since(start); took > hangGuard {
		t.Errorf("ConnectPostgres took %v to fail", took)
	}
	assertOneLine(t, err.Error(), []string{"127.0.0.1:1", "make up"}, password)
}

// The server answers, but not yes: each refusal must say what is wrong and
// its fix, never ask whether PostgreSQL runs, and never show the user or
// password.
func TestConnectPostgres_refused(t *testing.T) {
	testenv.Postgres(t) // skips, or fails under CI, when PostgreSQL is down
	base, err := url.Parse(env.DatabaseURL())
	if err != nil || base.User == nil || base.Host == "" {
		t.Skip("DATABASE_URL is not a postgres:// URL with a user; cannot vary it")
	}
	port := base.Port()
	if port == "" {
		port = "5432"
	}
	where := "postgres://" + net.JoinHostPort(base.Hostname(), port) + "/"
	user := base.User.Username()
	password, _ := base.User.Password()
	db := strings.TrimPrefix(base.Path, "/")
	// The default password is also the user and database name, which the
	// message names; only secrets that differ from both can be looked for.
	var secrets []string
	if password != user && password != db {
		secrets = append(secrets, password)
	}
	wrong, stranger := secret(t), "u"+secret(t)
	tests := []struct {
		name    string
		edit    func(u *url.URL)
		want    []string
		secrets []string
	}{
		{
			name: "a database that does not exist",
			edit: func(u *url.URL) { u.Path = "/nodb_" + wrong[2:10] },
			want: []string{where + "nodb_" + wrong[2:10], "no database", "3D000", "DATABASE_URL"},
		},
		{
			name:    "a wrong password",
			edit:    func(u *url.URL) { u.User = url.UserPassword(user, wrong) },
			want:    []string{where + db, "refused the credentials", "28P01", "check the user and password in DATABASE_URL"},
			secrets: []string{wrong},
		},
		{
			name:    "a user that does not exist",
			edit:    func(u *url.URL) { u.User = url.UserPassword(stranger, wrong) },
			want:    []string{where + db, "refused the credentials", "SQLSTATE 28", "DATABASE_URL"},
			secrets: []string{stranger, wrong},
		},
		{
			name:    "no password",
			edit:    func(u *url.URL) { u.User = url.User(stranger) },
			want:    []string{where + db, "refused the credentials", "DATABASE_URL has no password"},
			secrets: []string{stranger},
		},
		{
			name: "sslmode=require and a server without TLS",
			edit: func(u *url.URL) {
				q := u.Query()
				q.Set("sslmode", "require")
				u.RawQuery = q.Encode()
			},
			want: []string{where + db, "server refused TLS connection", "sslmode=disable"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := *base
			tt.edit(&u)
			t.Setenv("DATABASE_URL", u.String())
			start := time.Now()
			pool, err := env.ConnectPostgres(context.Background())
			if err == nil {
				pool.Close()
				t.Fatal("ConnectPostgres succeeded")
			}
			if took := time.Since(start); took > hangGuard {
				t.Errorf("ConnectPostgres took %v to fail", took)
			}
			assertOneLine(t, err.Error(), tt.want, append(tt.secrets, secrets...)...)
			if strings.Contains(err.Error(), "make up") {
				t.Errorf("a server that answered is blamed on not running: %v", err)
			}
		})
	}
}

// The reproduction of issue 10: an unencoded @ in the password made pgx
// take the password's tail for the host, and the error printed it.
func TestConnectPostgres_atInThePassword(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://walletlock:s3cr@tPass@127.0.0.1:5432/walletlock?sslmode=disable")
	pool, err := env.ConnectPostgres(context.Background())
	if err == nil {
		pool.Close()
		t.Fatal("ConnectPostgres accepted an unencoded @ in the password")
	}
	assertOneLine(t, err.Error(), []string{"DATABASE_URL", "%40"}, "s3cr", "tPass", "tPas")
}
