package fair_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
)

// setup returns a Redis client and a lock key under a prefix of the test's
// own.
func setup(t *testing.T) (redis.UniversalClient, string) {
	t.Helper()
	rdb := testenv.Redis(t)
	return rdb, testenv.Prefix(t, rdb) + "lock:{wallet:1}"
}

// ctxFor returns a context that ends after d, cancelled at the end of the
// test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// holderID returns the ID (see lock.Lock.ID) of the token stored at key,
// "" when the key does not exist: whose the lock is, told without the
// token, which package lock keeps to itself.
func holderID(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	v, err := rdb.Get(ctxFor(t, 5*time.Second), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	sum := sha1.Sum([]byte(v))
	return hex.EncodeToString(sum[:])
}
