//go:build unix

package drill

import (
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the drill's sentinels monitor the primary under.
const MasterName = "drill"

// NewClient returns a client for one of the drill's servers, with short
// timeouts so that a dead or frozen server fails a call in bounded time,
// and no retries: a retried SET NX would muddle what was granted.
func NewClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 8})
}

// NewFailoverClient returns a client that finds the primary through the
// sentinels and follows a failover.
func NewFailoverClient(sentinels []string) *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 8})
}
