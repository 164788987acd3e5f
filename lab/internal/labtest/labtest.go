// Package labtest is what the lab's tests add to the root's testenv:
// servers of a test's own (StartRedis, StartCluster), what the programs'
// tests check the same way in each (Interrupt, SecondRunRefused,
// JSONKeepsKeys, ...), and wallet ids of a test's own.
package labtest

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
)

// Prefix is the root's testenv.Prefix, whose keys are deleted when the
// test ends, and so are those under "{" + prefix, where a lock keeps the
// companions of a key that has no hash tag of its own (lock.FenceKey).
func Prefix(t testing.TB, rdb redis.UniversalClient) string {
	t.Helper()
	prefix := testenv.Prefix(t, rdb)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		env.ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.Cmdable) error {
			iter := node.Scan(ctx, 0, env.GlobEscape("{"+prefix)+"*", 1000).Iterator()
			for iter.Next(ctx) {
				node.Del(ctx, iter.Val()) // one key, one slot
			}
			return iter.Err()
		})
	})
	return prefix
}

// WalletID returns a random wallet id in [1e9, 9e18), for tests that use
// PostgreSQL rows: the packages test in parallel against one database.
func WalletID(t testing.TB) int64 {
	return 1_000_000_000 + rand.Int64N(9_000_000_000_000_000_000-1_000_000_000)
}
