package env

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

// Defaults, the root's (wallet.Client, postgres.Config) when the
// environment names nothing else. They match docker-compose.yml and what
// `make up` (cmd/servers) starts.
const (
	DefaultRedisAddr   = "localhost:6379"
	DefaultDatabaseURL = "postgres://walletlock:walletlock@localhost:5432/walletlock?sslmode=disable"
)

// ConnectTimeout bounds how long Connect (and ConnectPostgres) wait for a
// service to answer, so that a program with nothing to talk to says so
// within a few seconds instead of hanging.
const ConnectTimeout = 3 * time.Second

// Quiet stops go-redis's own log of each failed dial, for the rest of the
// process: the programs report an unreachable server in one line of their
// own. Importing env does not.
var Quiet = sync.OnceFunc(func() { redis.SetLogger(quietLogger{}) })

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// RedisOptions is where the programs find Redis, as the root's
// wallet.Client reads it from the environment (REDIS_URL, REDIS_ADDR,
// REDIS_CA_FILE), with the lab's bounds: every port one a server can
// listen on, and a connection that gives up within ConnectTimeout. Errors
// never contain the URL, nor any part of its user and password.
func RedisOptions() (*redis.UniversalOptions, error) {
	rdb, _, err := wallet.Client()
	if err != nil {
		return nil, err
	}
	defer rdb.Close()
	var opt *redis.UniversalOptions
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		opt = fromCluster(c.Options())
	case *redis.Client:
		opt = fromSingle(c.Options())
	default:
		return nil, fmt.Errorf("env: a Redis client of type %T", rdb)
	}
	for _, addr := range opt.Addrs {
		if err := CheckPort(addr); err != nil {
			return nil, fmt.Errorf("REDIS_ADDR (or the address in REDIS_URL) %w (host:port, or host:port,host:port,... for a cluster)", err)
		}
	}
	// A socket read must end when the caller's context does; otherwise
	// go-redis would keep waiting until its own ReadTimeout.
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout = ConnectTimeout
	// A refused connection is not worth retrying for seconds: say so fast.
	opt.MaxRetries = 1
	return opt, nil
}

// CheckPort returns an error unless the port of addr (host:port) is one
// a server can listen on and a client dial: a number from 1 to 65535. A
// server told port 0 listens on no TCP port at all.
func CheckPort(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("%q: the port must be a number from 1 to 65535, not %q", addr, port)
	}
	return nil
}

// warnings is where Connect warns that a certificate goes unchecked; once
// per process is enough.
var (
	warnings   io.Writer = os.Stderr
	warnedOnce sync.Once
)

// warnUnverified says, once, that opt's TLS connections check no
// certificate: skip_verify=true is a choice, never a silent one.
func warnUnverified(opt *redis.UniversalOptions) {
	if opt.TLSConfig == nil || !opt.TLSConfig.InsecureSkipVerify {
		return
	}
	warnedOnce.Do(func() {
		fmt.Fprintf(warnings, "warning: REDIS_URL has skip_verify=true: the certificate of %s is not checked, so anyone on the way can read and change the traffic; set REDIS_CA_FILE to its CA's certificate instead\n", redisURL(opt))
	})
}

// IsCluster reports whether opt names the seeds of a Redis Cluster rather
// than one server: redis.NewUniversalClient's rule.
func IsCluster(opt *redis.UniversalOptions) bool { return len(opt.Addrs) > 1 || opt.IsClusterMode }

// ClusterReloadInterval is how old a cluster client's slot map may grow
// before the next command makes it read the map again. go-redis's default
// is a minute: after a failover its commands would go to the dead master
// for that long, because a refused connection, unlike a MOVED reply, does
// not make it look again (see also followFailover).
const ClusterReloadInterval = time.Second

// ClusterOptions returns the options of a cluster client for opt. Besides
// ClusterReloadInterval, it keeps the promise of opt.MaxRetries < 0 (never
// send a command twice): go-redis retries a cluster command up to
// MaxRedirects times, whatever MaxRetries says, after a timeout too, and
// a spend whose reply was lost would run again on the promoted replica.
func ClusterOptions(opt *redis.UniversalOptions) *redis.ClusterOptions {
	c := opt.Cluster()
	c.ClusterStateReloadInterval = ClusterReloadInterval
	if opt.MaxRetries < 0 {
		c.MaxRedirects = -1 // go-redis's "none"; 0 would mean its default, 3
	}
	return c
}

// NewClient makes the client for opt, as redis.NewUniversalClient would
// (a *redis.ClusterClient for a cluster, else a *redis.Client), except
// that a cluster client follows a failover: see ClusterOptions and
// followFailover. It does not check that the server answers (Connect does).
func NewClient(opt *redis.UniversalOptions) redis.UniversalClient {
	if !IsCluster(opt) {
		return redis.NewClient(opt.Simple())
	}
	c := redis.NewClusterClient(ClusterOptions(opt))
	c.AddHook(followFailover{c})
	return c
}

// fromSingle carries what redis.ParseURL read into UniversalOptions.
func fromSingle(o *redis.Options) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs: []string{o.Addr}, ClientName: o.ClientName, DB: o.DB, Protocol: o.Protocol,
		Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff,
		ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolFIFO: o.PoolFIFO, PoolSize: o.PoolSize, PoolTimeout: o.PoolTimeout,
		MinIdleConns: o.MinIdleConns, MaxIdleConns: o.MaxIdleConns, MaxActiveConns: o.MaxActiveConns,
		ConnMaxIdleTime: o.ConnMaxIdleTime, ConnMaxLifetime: o.ConnMaxLifetime,
		DisableIdentity: o.DisableIdentity, IdentitySuffix: o.IdentitySuffix,
	}
}

// fromCluster carries what redis.ParseClusterURL read into UniversalOptions.
func fromCluster(o *redis.ClusterOptions) *redis.UniversalOptions {
	return &redis.UniversalOptions{
		Addrs: o.Addrs, ClientName: o.ClientName, Protocol: o.Protocol,
		Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
		MaxRetries: o.MaxRetries, MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff,
		ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolFIFO: o.PoolFIFO, PoolSize: o.PoolSize, PoolTimeout: o.PoolTimeout,
		MinIdleConns: o.MinIdleConns, MaxIdleConns: o.MaxIdleConns, MaxActiveConns: o.MaxActiveConns,
		ConnMaxIdleTime: o.ConnMaxIdleTime, ConnMaxLifetime: o.ConnMaxLifetime,
		MaxRedirects: o.MaxRedirects, ReadOnly: o.ReadOnly, RouteByLatency: o.RouteByLatency, RouteRandomly: o.RouteRandomly,
		IsClusterMode: true,
	}
}

// shakeHands completes one TLS handshake with a rediss:// server. When a
// handshake hangs (a plain Redis never answers a TLS hello) go-redis
// reports only that the context ran out. A handshake that fails is a
// *tlsError.
func shakeHands(ctx context.Context, opt *redis.UniversalOptions) error {
	addr := opt.Addrs[0]
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conf := opt.TLSConfig
	if conf.ServerName == "" {
		conf = conf.Clone()
		conf.ServerName, _, _ = net.SplitHostPort(addr)
	}
	if err := tls.Client(conn, conf).HandshakeContext(ctx); err != nil {
		return &tlsError{err}
	}
	return nil
}

// tlsError is a TLS handshake that failed.
type tlsError struct{ err error }

func (e *tlsError) Error() string { return "tls handshake: " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// Connect returns a Redis client for the configured server after checking
// that it answers (on a cluster, that every node says cluster_state:ok).
// The error is one line that names the server as redis://host:port/db
// (never the user or password), what went wrong and the fix.
func Connect(ctx context.Context) (redis.UniversalClient, error) {
	Quiet()
	opt, err := RedisOptions()
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if opt.TLSConfig != nil {
		warnUnverified(opt)
		if err := shakeHands(pctx, opt); err != nil {
			return nil, redisError(opt, err)
		}
	}
	if IsCluster(opt) {
		rdb := NewClient(opt).(*redis.ClusterClient)
		if err := clusterOK(pctx, rdb, opt); err != nil {
			rdb.Close()
			return nil, redisError(opt, err)
		}
		return rdb, nil
	}
	rdb := NewClient(opt)
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, redisError(opt, err)
	}
	return rdb, nil
}

// redisURL names the server opt points at, as redis://host:port/db or
// rediss://..., without the user and password; a cluster as
// redis://host:port,host:port,...
func redisURL(opt *redis.UniversalOptions) string {
	scheme := "redis"
	if opt.TLSConfig != nil {
		scheme = "rediss"
	}
	if IsCluster(opt) {
		return scheme + "://" + strings.Join(opt.Addrs, ",")
	}
	return scheme + "://" + opt.Addrs[0] + "/" + strconv.Itoa(opt.DB)
}

// redisError turns a failed first PING into one line that says what is
// wrong and what to do. A reply from the server means it runs and refused
// us for a reason of its own; only the rest asks whether it runs at all.
func redisError(opt *redis.UniversalOptions, err error) error {
	// The server's words, on one line (every report is one line) and
	// through the one printable filter: they are not ours to trust with
	// a terminal.
	where, msg := redisURL(opt), safe.Line(err.Error())
	up := "make up"
	if IsCluster(opt) {
		where, up = "the Redis Cluster at "+where, "make cluster-up"
	}
	var tlsErr *tlsError
	var notOK *clusterNotOK
	switch {
	case errors.As(err, &notOK):
		return fmt.Errorf("%s is not ok (%s): start it, or wait for it to settle, with `make cluster-up`", where, msg)
	case strings.Contains(msg, "cluster support disabled"):
		return fmt.Errorf("%s is not a cluster (%s): several addresses in REDIS_ADDR name the nodes of a Redis Cluster; give one address for a single server", where, msg)
	case errors.As(err, &tlsErr):
		return handshakeError(where, tlsErr.err)
	case strings.HasPrefix(msg, "NOAUTH"):
		fix := fmt.Sprintf("set REDIS_URL=redis://:PASSWORD@%s/%d", opt.Addrs[0], opt.DB)
		if opt.Username != "" {
			// redis://secret@host names a user, not a password.
			fix = "REDIS_URL names a user but no password; a password alone is written redis://:PASSWORD@host:port/db"
		}
		return fmt.Errorf("%s wants a password (%s): %s", where, msg, fix)
	case redis.IsAuthError(err), strings.Contains(msg, "invalid password"):
		return fmt.Errorf("%s refused the credentials (%s): check the user and password in REDIS_URL", where, msg)
	case strings.Contains(msg, "DB index is out of range"), strings.Contains(msg, "invalid DB index"):
		return fmt.Errorf("%s: the server has no database %d (%s): use a smaller number at the end of REDIS_URL, 0 to 15 with the default `databases 16`", where, opt.DB, msg)
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return fmt.Errorf("%s answered with an error (%s)", where, msg)
	}
	if opt.TLSConfig == nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		// A TLS-only server hangs up on a plain hello.
		return fmt.Errorf("%s hung up (%s): a server that wants TLS does that, so try rediss://; is it Redis at all?", where, msg)
	}
	return fmt.Errorf("%s is not reachable (%s): is Redis running? try `%s`", where, msg, up)
}

// handshakeError says why a TLS handshake failed: a certificate this
// machine does not trust, or one for other names or another time, each
// with its fix; anything else is a server that speaks no TLS.
func handshakeError(where string, err error) error {
	// The reason may quote names from the server's certificate: no
	// control character of theirs reaches the terminal.
	msg := safe.Line(err.Error())
	var unknownCA x509.UnknownAuthorityError
	var badHost x509.HostnameError
	var invalid x509.CertificateInvalidError
	switch {
	case errors.As(err, &unknownCA):
		return fmt.Errorf("%s: the server's certificate is not trusted (%s): set REDIS_CA_FILE to the PEM file of the CA that signed it "+
			"(for a self-signed certificate, the certificate itself), or add ?skip_verify=true to REDIS_URL to skip the check (insecure)", where, msg)
	case errors.As(err, &badHost):
		return fmt.Errorf("%s: the server's certificate is not for this host (%s): put a host name it names in REDIS_URL", where, msg)
	case errors.As(err, &invalid):
		return fmt.Errorf("%s: the server's certificate is not valid (%s): renew it, or check this machine's clock", where, msg)
	}
	return fmt.Errorf("%s: the TLS handshake failed (%s): check the scheme of REDIS_URL, rediss:// is for a server with TLS, redis:// for one without", where, msg)
}

// DatabaseURL is DATABASE_URL, or the default, as the root's
// postgres.Config reads it: what a program hands on to another, or names
// in a command it prints.
func DatabaseURL() string {
	cfg, err := postgres.Config()
	if err != nil {
		return DefaultDatabaseURL // ConnectPostgres says what is wrong with it
	}
	return cfg.ConnString()
}
