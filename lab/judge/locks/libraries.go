package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	rsredigo "github.com/go-redsync/redsync/v4/redis/redigo"
	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/judge"
)

// Redislock is github.com/bsm/redislock v0.10.0 (step 4's), waiting for a
// held lock by trying again every 10 ms until ctx ends. It has no watchdog
// and, in this release, no fence.
var Redislock = judge.Adapter{Name: "redislock", New: func(addr string) (judge.Lock, error) {
	rdb := client(addr)
	return rlLock{redislock.New(rdb), rdb}, nil
}}

type rlLock struct {
	c   *redislock.Client
	rdb *redis.Client
}

func (l rlLock) Acquire(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	x, err := l.c.Obtain(ctx, key, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)})
	if err != nil {
		return nil, err
	}
	return rlLease{x}, nil
}

func (l rlLock) Close() error { return l.rdb.Close() }

type rlLease struct{ l *redislock.Lock }

func (l rlLease) Release(ctx context.Context) error {
	return notHeld(l.l.Release(ctx), redislock.ErrLockNotHeld)
}
func (l rlLease) Refresh(ctx context.Context, ttl time.Duration) error {
	return notHeld(l.l.Refresh(ctx, ttl, nil), redislock.ErrNotObtained)
}

// Redsync is github.com/go-redsync/redsync/v4's mutex on the judge's one
// Redis (Redlock with one node), with its defaults but the expiry: 32
// tries, 50 to 250 ms apart. It has no watchdog and no fence; Extend
// renews the expiry it was made with.
var Redsync = judge.Adapter{Name: "redsync", New: func(addr string) (judge.Lock, error) {
	rdb := client(addr)
	return rsLock{redsync.New(goredis.NewPool(rdb)), rdb.Close}, nil
}}

// RedsyncRedigo is the same mutex on a github.com/gomodule/redigo v1.9.3
// pool: a lock on another client library, whose commands the judge sees
// at the wire all the same. Redigo sends each command once and bounds it
// by its connection's read and write timeouts, not by ctx (redsync's
// redigo pool calls Do): ctx bounds the wait for a connection and
// redsync's tries.
var RedsyncRedigo = judge.Adapter{Name: "redsync-redigo", New: func(addr string) (judge.Lock, error) {
	pool := &redigo.Pool{MaxIdle: 8, IdleTimeout: time.Minute, Dial: func() (redigo.Conn, error) {
		return redigo.Dial("tcp", addr, redigo.DialConnectTimeout(time.Second),
			redigo.DialReadTimeout(2*time.Second), redigo.DialWriteTimeout(2*time.Second))
	}}
	return rsLock{redsync.New(rsredigo.NewPool(pool)), pool.Close}, nil
}}

type rsLock struct {
	rs    *redsync.Redsync
	close func() error // the client's or the pool's
}

func (l rsLock) Acquire(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	m := l.rs.NewMutex(key, redsync.WithExpiry(ttl))
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return rsLease{m}, nil
}

func (l rsLock) Close() error { return l.close() }

type rsLease struct{ m *redsync.Mutex }

func (l rsLease) Release(ctx context.Context) error { return held(l.m.UnlockContext(ctx)) }
func (l rsLease) Refresh(ctx context.Context, _ time.Duration) error {
	return held(l.m.ExtendContext(ctx))
}

// held is redsync's (ok, err) as one error: ok false with no error, or
// ErrLockAlreadyExpired or ErrExtendFailed, is "not held".
func held(ok bool, err error) error {
	switch {
	case errors.Is(err, redsync.ErrLockAlreadyExpired), errors.Is(err, redsync.ErrExtendFailed):
		return fmt.Errorf("%w: %w", judge.ErrNotHeld, err)
	case !ok && err == nil:
		return fmt.Errorf("%w: redsync answered false", judge.ErrNotHeld)
	}
	return err
}

// client is a go-redis client of the judge's Redis at addr that sends
// every command once: a command whose reply was lost is not sent again
// blind.
func client(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
}
