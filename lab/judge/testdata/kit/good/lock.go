// Package good is a lock in a module of its own, as a library's repo
// would hold it: SET NX PX to take it, one script to give it back.
package good

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

var ErrNotHeld = errors.New("good: not held")

type Lock struct {
	rdb   *redis.Client
	key   string
	token string
}

func Acquire(ctx context.Context, rdb *redis.Client, key string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, errors.New("good: TTL under 1ms")
	}
	token := rand.Text()
	for {
		ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &Lock{rdb, key, token}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

func (l *Lock) Release(ctx context.Context) error {
	n, err := release.Run(ctx, l.rdb, []string{l.key}, l.token).Int()
	if err == nil && n == 0 {
		err = ErrNotHeld
	}
	return err
}
