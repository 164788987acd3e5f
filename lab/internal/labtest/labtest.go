// Package labtest gives integration tests their Redis, PostgreSQL and a key
// prefix of their own.
//
// Without a reachable service a test skips with a message saying how to
// start one; when the CI variable is set it fails instead, so that a CI run
// can never pass by skipping.
//
// It also holds what the programs' tests check the same way in each
// (Interrupt, SecondRunRefused, JSONKeepsKeys, ...), and starts servers of
// a test's own through internal/launch. Used only by tests: of every
// cmd/ program, lock, wallet and the internal packages.
package labtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/wallet/postgres"
)

// unavailable skips the test, or fails it under CI.
func unavailable(t testing.TB, what string, err error) {
	t.Helper()
	msg := what + " is not available: " + err.Error() + "\n\tstart the services with `make up` (or run `make test`, which does)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + "\n\tCI is set, so this fails instead of skipping")
	}
	t.Skip(msg)
}

// Redis returns a client for the configured Redis, closed when the test
// ends: a *redis.Client, or a *redis.ClusterClient when REDIS_ADDR names
// the nodes of a cluster (see env.RedisOptions).
func Redis(t testing.TB) redis.UniversalClient {
	t.Helper()
	rdb, err := env.Connect(context.Background())
	if err != nil {
		unavailable(t, "Redis", err)
	}
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// Postgres returns a pool for the configured PostgreSQL, closed when the
// test ends.
func Postgres(t testing.TB) *pgxpool.Pool {
	t.Helper()
	pool, err := postgres.Connect(context.Background())
	if err != nil {
		unavailable(t, "PostgreSQL", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// Prefix returns a Redis key prefix that no other test uses, such as
// "test:TestSpend_refuses:3f9a1c2e:". Every key under it is deleted when the
// test ends, and so is every key under "{" + prefix (a lock's companion keys
// wrap a key that has no hash tag of its own in one); nothing else is
// touched.
func Prefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '-'
	}, t.Name())
	b := make([]byte, 4)
	rand.Read(b)
	prefix := "test:" + name + ":" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		env.DeletePrefix(ctx, rdb, prefix)
		env.DeletePrefix(ctx, rdb, "{"+prefix)
	})
	return prefix
}

// WalletID returns a wallet id, unique across the packages that test in
// parallel against one database, for tests that use PostgreSQL rows.
// Ids are random in [1e9, 9e18), so they never meet the small ids the demo
// programs use.
func WalletID(t testing.TB) int64 {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	var n uint64
	for _, c := range b {
		n = n<<8 | uint64(c)
	}
	return 1_000_000_000 + int64(n%(9_000_000_000_000_000_000-1_000_000_000))
}
