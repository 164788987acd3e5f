package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// AcquireFenced is Acquire with a fencing token: with the lock it takes the
// next number of the counter at fenceKey, in one script
// (acquire_fenced.lua), so later holders always carry higher fences: the
// database the lock guards can then turn down a holder that wakes from a
// pause past its TTL. Step 5 shows which check does that.
//
// key and fenceKey must differ, and share a Redis Cluster hash slot: give
// them one hash tag, as lock:{wallet:42} and fence:{wallet:42}. When
// fenceKey holds something INCR cannot count, the call fails and holds
// nothing: the script gives the lock back.
func AcquireFenced(ctx context.Context, rdb Client, key, fenceKey string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, ErrBadTTL
	}
	if fenceKey == key {
		return nil, fmt.Errorf("lock: acquire %s: fenceKey is the lock's own key; give the counter one of its own, as fence:{wallet:42}", key)
	}
	token := rand.Text()
	for {
		fence, err := acquireFencedScript.Run(ctx, rdb, []string{key, fenceKey}, token, ttl.Milliseconds()).Int64()
		if err != nil {
			return nil, failed(ctx, key, err)
		}
		if fence > 0 {
			return &Lock{rdb: rdb, Key: key, Token: token, Fence: fence}, nil
		}
		if err := pause(ctx); err != nil {
			return nil, failed(ctx, key, err)
		}
	}
}

//go:embed acquire_fenced.lua
var acquireFencedLua string

var acquireFencedScript = redis.NewScript(acquireFencedLua)
