package fair_test

import (
	"crypto/sha1"
	"encoding/hex"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
)

// setup returns a Redis client and a lock key under a prefix of the test's
// own.
func setup(t *testing.T) (redis.UniversalClient, string) {
	t.Helper()
	rdb := testenv.Redis(t)
	return rdb, labtest.Prefix(t, rdb) + "lock:{wallet:1}"
}

// holderID returns the ID (see lock.Lock.ID) of the token stored at key:
// whose the lock is, told without the token, which package lock keeps to
// itself. A missing key (or a failed GET) gives the ID of "", which no
// lock has.
func holderID(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	sum := sha1.Sum([]byte(rdb.Get(labtest.Context(t, 5*time.Second), key).Val()))
	return hex.EncodeToString(sum[:])
}
