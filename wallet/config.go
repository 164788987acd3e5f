package wallet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// Defaults, used when the environment names nothing else. They match
// docker-compose.yml and scripts/services.sh.
const (
	DefaultRedisAddr   = "localhost:6379"
	DefaultDatabaseURL = "postgres://walletlock:walletlock@localhost:5432/walletlock?sslmode=disable"
)

// ConnectTimeout bounds how long Connect and ConnectPostgres wait for a
// service to answer, so that a program with nothing to talk to says so
// within a few seconds instead of hanging.
const ConnectTimeout = 3 * time.Second

// go-redis logs each failed dial to stderr on its own; the programs report
// an unreachable server in one line of their own, so its log stays quiet.
func init() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

// RedisOptions reads the Redis settings from the environment, the one place
// where they are read: REDIS_URL (redis:// or rediss://, with user, password
// and db) wins over REDIS_ADDR, which defaults to localhost:6379.
//
// Errors never contain the URL, which may carry a password.
func RedisOptions() (*redis.Options, error) {
	var opt *redis.Options
	if raw := os.Getenv("REDIS_URL"); raw != "" {
		if userinfoNeedsEscaping(raw) {
			return nil, errors.New("REDIS_URL: percent-encode / ? # % in the user and password (as %2F %3F %23 %25); the form is redis://user:password@host:6379/0")
		}
		u, err := url.Parse(raw)
		if err != nil {
			// url.Error repeats the whole URL, password included: keep
			// only the reason.
			var ue *url.Error
			if errors.As(err, &ue) {
				err = ue.Err
			}
			return nil, fmt.Errorf("REDIS_URL is not a valid URL (%v); the form is redis://user:password@host:6379/0", err)
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" {
			return nil, fmt.Errorf("REDIS_URL must start with redis:// or rediss://, not %q", u.Scheme+"://")
		}
		opt, err = redis.ParseURL(raw)
		if err != nil {
			return nil, fmt.Errorf("REDIS_URL: %v", err)
		}
	} else {
		addr := os.Getenv("REDIS_ADDR")
		if addr == "" {
			addr = DefaultRedisAddr
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return nil, fmt.Errorf("REDIS_ADDR %q is not host:port", addr)
		}
		opt = &redis.Options{Addr: addr}
	}
	// Let context deadlines cut socket reads short; without this go-redis
	// waits out its own ReadTimeout instead of the caller's context.
	opt.ContextTimeoutEnabled = true
	opt.DialTimeout = ConnectTimeout
	// A refused connection is not worth retrying for seconds: say so fast.
	opt.MaxRetries = 1
	return opt, nil
}

// Connect returns a Redis client for the configured server after checking
// that it answers. The error is one line that names the address (never the
// password) and the fix.
func Connect(ctx context.Context) (*redis.Client, error) {
	opt, err := RedisOptions()
	if err != nil {
		return nil, err
	}
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, redisError(opt.Addr, err)
	}
	return rdb, nil
}

// userinfoNeedsEscaping reports whether the user:password part of a URL
// holds a character that must be percent-encoded there. An unencoded / ? or
// # makes the parser split the URL inside the password, and a bare % is an
// invalid escape; either way the parser's error would quote a piece of the
// password, so the caller must say what is wrong without using it.
func userinfoNeedsEscaping(raw string) bool {
	_, rest, ok := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if !ok || at < 0 {
		return false
	}
	info := rest[:at]
	_, err := url.PathUnescape(info)
	return err != nil || strings.ContainsAny(info, "/?#")
}

// oneLine folds a multi-line driver error (pgx lists each address it tried
// on a line of its own) into one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

func redisError(addr string, err error) error {
	msg := oneLine(err)
	switch {
	case strings.Contains(msg, "WRONGPASS"), strings.Contains(msg, "NOAUTH"),
		strings.Contains(msg, "invalid password"), strings.Contains(msg, "invalid username-password"):
		return fmt.Errorf("redis at %s refused the credentials (%s): check the user and password in REDIS_URL", addr, msg)
	default:
		return fmt.Errorf("redis at %s is not reachable (%s): is Redis running? try `make up`", addr, msg)
	}
}

// DatabaseURL returns DATABASE_URL, or the default that docker-compose.yml
// and scripts/services.sh provide.
func DatabaseURL() string {
	if u := os.Getenv("DATABASE_URL"); u != "" {
		return u
	}
	return DefaultDatabaseURL
}

// ConnectPostgres returns a pool for DATABASE_URL after checking that the
// server answers. Like Connect, its error is one line naming the address
// (host:port/database, no credentials) and the fix.
func ConnectPostgres(ctx context.Context) (*pgxpool.Pool, error) {
	raw := DatabaseURL()
	if userinfoNeedsEscaping(raw) {
		return nil, errors.New("DATABASE_URL: percent-encode / ? # % in the user and password (as %2F %3F %23 %25); the form is postgres://user:password@host:5432/db?sslmode=disable")
	}
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		// pgx redacts the password in its parse errors, but the message
		// still quotes the URL; say only what is wrong.
		return nil, errors.New("DATABASE_URL is not a valid PostgreSQL URL; the form is postgres://user:password@host:5432/db?sslmode=disable")
	}
	cfg.ConnConfig.ConnectTimeout = ConnectTimeout
	addr := net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))) + "/" + cfg.ConnConfig.Database
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres at %s: %s", addr, oneLine(err))
	}
	pctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		msg := oneLine(err)
		if strings.Contains(msg, "password authentication failed") || strings.Contains(msg, "SQLSTATE 28") {
			return nil, fmt.Errorf("postgres at %s refused the credentials: check the user and password in DATABASE_URL", addr)
		}
		// pgx errors name the host and user but never the password.
		return nil, fmt.Errorf("postgres at %s is not reachable (%s): is PostgreSQL running? try `make up`", addr, msg)
	}
	return pool, nil
}
