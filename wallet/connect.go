package wallet

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/safe"
)

// Connect returns a client for the Redis the environment names, once that
// Redis has answered a PING:
//
//   - REDIS_URL, redis://user:password@host:6379/0, read by go-redis's
//     ParseURL; rediss:// for TLS, with REDIS_CA_FILE naming a PEM file of
//     the CA when this machine does not trust it; with addr= parameters
//     (?addr=host:7002&addr=host:7003), a Redis Cluster (ParseClusterURL);
//   - otherwise REDIS_ADDR, host:port, localhost:6379 by default; several,
//     comma-separated, are the nodes of a Redis Cluster.
//
// Its errors say what is wrong and how to fix it, and never show a password.
func Connect(ctx context.Context) (redis.UniversalClient, error) {
	quieted.Do(func() { redis.SetLogger(quiet{}) })
	rdb, where, err := Client()
	if err != nil {
		return nil, fmt.Errorf("wallet: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = rdb.Ping(pctx).Err()
	switch {
	case err == nil:
		return rdb, nil
	case redis.IsAuthError(err): // NOAUTH, WRONGPASS: it runs, and refused us
		err = fmt.Errorf("wallet: Redis at %s: %w (check the user and password in REDIS_URL, redis://user:password@host:6379/0)", where, err)
	default:
		err = fmt.Errorf("wallet: Redis at %s: %w (is it running? `make up` starts one; REDIS_ADDR or REDIS_URL say where it is)", where, err)
	}
	rdb.Close()
	return nil, err
}

// go-redis logs every failed dial on its own; Connect's error says it once.
var quieted sync.Once // by the first Connect, not on import

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

// Client is Connect without the PING, and where the client talks: for a
// program that must know where Redis is before it runs (the lab's make up).
func Client() (rdb redis.UniversalClient, where string, err error) {
	raw := os.Getenv("REDIS_URL")
	if raw == "" {
		if os.Getenv("REDIS_CA_FILE") != "" {
			return nil, "", errors.New("REDIS_CA_FILE is set, but only a rediss:// REDIS_URL uses TLS")
		}
		addrs := strings.Split(strings.ReplaceAll(cmp.Or(os.Getenv("REDIS_ADDR"), "localhost:6379"), " ", ""), ",")
		rdb = redis.NewUniversalClient(&redis.UniversalOptions{
			Addrs: addrs,
			// Let a context's deadline cut a read short, rather than
			// go-redis's own 3 s read timeout.
			ContextTimeoutEnabled: true,
			// A command whose reply was lost may have run: never send it
			// again blind (the lock's release would then read "not held").
			MaxRetries: -1,
		})
		return rdb, strings.Join(addrs, ","), nil
	}
	if err := safe.CheckURL("REDIS_URL", raw); err != nil {
		return nil, "", err
	}
	if u, err := url.Parse(raw); err != nil || strings.Contains(u.Hostname(), ":") && net.ParseIP(u.Hostname()) == nil {
		// url's error repeats the URL, password and all; and a user and
		// password with no @host parse as a host, which a dial would print.
		return nil, "", errors.New("REDIS_URL is not a URL; the form is redis://user:password@host:6379/0")
	}
	if strings.Contains(raw, "addr=") {
		opt, err := redis.ParseClusterURL(raw)
		if err != nil {
			return nil, "", fmt.Errorf("REDIS_URL: %w; a cluster is redis://user:password@host:7001?addr=host:7002", err)
		}
		opt.ContextTimeoutEnabled, opt.MaxRetries = true, -1
		if opt.TLSConfig, err = trust(opt.TLSConfig); err != nil {
			return nil, "", err
		}
		return redis.NewClusterClient(opt), strings.Join(opt.Addrs, ","), nil
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		return nil, "", fmt.Errorf("REDIS_URL: %w; the form is redis://user:password@host:6379/0", err)
	}
	opt.ContextTimeoutEnabled, opt.MaxRetries = true, -1
	if opt.TLSConfig, err = trust(opt.TLSConfig); err != nil {
		return nil, "", err
	}
	return redis.NewClient(opt), opt.Addr, nil
}

// trust adds the CA of REDIS_CA_FILE, if set, to a rediss:// URL's TLS.
func trust(conf *tls.Config) (*tls.Config, error) {
	file := os.Getenv("REDIS_CA_FILE")
	switch {
	case file == "":
		return conf, nil
	case conf == nil:
		return nil, errors.New("REDIS_CA_FILE is set, but REDIS_URL starts with redis://, not rediss://")
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("REDIS_CA_FILE: %w", err)
	}
	conf.RootCAs = x509.NewCertPool()
	if !conf.RootCAs.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("REDIS_CA_FILE %s holds no PEM certificate", file)
	}
	return conf, nil
}
