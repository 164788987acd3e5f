// Package checkthenact is good, but its Release checks the token and
// deletes the key in two commands: GET, then DEL.
package checkthenact

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

var ErrNotHeld = errors.New("checkthenact: not held")

type Lock struct {
	rdb   *redis.Client
	key   string
	token string
}

func Acquire(ctx context.Context, rdb *redis.Client, key string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, errors.New("checkthenact: TTL under 1ms")
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

func (l *Lock) Release(ctx context.Context) error {
	got, err := l.rdb.Get(ctx, l.key).Result()
	if err != nil && err != redis.Nil {
		return err
	}
	if got != l.token {
		return ErrNotHeld
	}
	return l.rdb.Del(ctx, l.key).Err()
}
