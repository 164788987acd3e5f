package lock

import (
	"context"
	_ "embed"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed acquire_fenced.lua
	acquireFencedLua    string
	acquireFencedScript = redis.NewScript(acquireFencedLua)

	//go:embed raise_fence.lua
	raiseFenceLua    string
	raiseFenceScript = redis.NewScript(raiseFenceLua)
)

// AcquireFenced is Acquire plus a fencing token: taking the lock and
// incrementing the key's fence counter happen in one script, so l.Fence is
// greater than zero and greater than every fence handed out before for
// this key. Hand the fence to the database with every write and let it
// refuse writes from an older fence (see wallet.Store.SpendFenced).
//
// The counter lives at FenceKey(key) and never expires. It returns the
// same errors as Acquire.
func AcquireFenced(ctx context.Context, rdb Client, key string, ttl time.Duration) (*Lock, error) {
	var fence int64
	l, err := acquire(ctx, rdb, key, ttl, func(token string) (bool, error) {
		var err error
		fence, err = acquireFencedScript.Run(ctx, rdb, []string{key, FenceKey(key)}, token, ttl.Milliseconds()).Int64()
		return fence > 0, err
	})
	if err != nil {
		return nil, err
	}
	l.Fence = fence
	return l, nil
}

// FenceKey returns the key of the fence counter for a lock key. It shares
// the lock key's Redis Cluster hash slot, so that one script can touch
// both: "app:lock:{wallet:42}" has the counter "app:lock:{wallet:42}:fence"
// (same hash tag), and a key without a hash tag, "lock:7", has the counter
// "{lock:7}:fence" (whose hash tag is the whole lock key).
//
// One kind of key has no such counter: a key without a hash tag that
// contains "}" (such as "lock:{}:7", where "{}" is no hash tag). Redis
// Cluster hashes such a key whole, only that key hashes the same text (a
// hash tag cannot contain "}"), so its counter lands in another slot and
// AcquireFenced fails there with CROSSSLOT. Give such keys a hash tag. A
// single node is unaffected.
func FenceKey(key string) string {
	if hasHashTag(key) {
		return key + ":fence"
	}
	return "{" + key + "}:fence"
}

// hasHashTag reports whether Redis Cluster would hash only part of key: a
// "{" followed later by a "}" with at least one byte between them.
func hasHashTag(key string) bool {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return false
	}
	end := strings.IndexByte(key[open+1:], '}')
	return end > 0
}

// RaiseFence makes sure the fence counter of lock key is at least atLeast
// and returns its value afterwards. Use it when the database refuses a
// fence as stale while Redis handed it out as new: Redis lost the counter
// (a restart without persistence) and it restarted below what the database
// has accepted. Raising it to the database's highest fence lets the next
// acquisition be accepted again; it never lowers the counter.
func RaiseFence(ctx context.Context, rdb Client, key string, atLeast int64) (int64, error) {
	if key == "" {
		return 0, ErrEmptyKey
	}
	n, err := raiseFenceScript.Run(ctx, rdb, []string{FenceKey(key)}, atLeast).Int64()
	if err != nil {
		return 0, fmt.Errorf("lock: raise fence of %s: %w", key, err)
	}
	return n, nil
}
