// Package learner is a lock as a learner writes it after step 2, from the
// redis-cli session alone: SET NX PX to take it, a script that checks the
// token to give it back. Its test judges it in one line (judge.Test); `make
// judge LOCK=./lab/judge/learner` judges it from the command line.
package learner

import (
	"context"
	"crypto/rand"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotHeld: the key no longer holds our token.
var ErrNotHeld = errors.New("learner: lock not held")

// Lock is a lease on Key.
type Lock struct {
	rdb   *redis.Client
	Key   string
	token string
}

// Acquire takes the lock, asking again every 10 ms until ctx ends.
func Acquire(ctx context.Context, rdb *redis.Client, key string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, errors.New("learner: TTL under 1ms")
	}
	token := rand.Text()
	for {
		ok, err := rdb.SetNX(ctx, key, token, ttl).Result()
		if err != nil {
			return nil, err
		}
		if ok {
			return &Lock{rdb: rdb, Key: key, token: token}, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

var release = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)

// Release deletes the key if it still holds our token.
func (l *Lock) Release(ctx context.Context) error {
	n, err := release.Run(ctx, l.rdb, []string{l.Key}, l.token).Int()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
