package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrNotHeld is returned by Release and Refresh when the lock expired or
	// now holds another holder's token, and is the cause of a Watch
	// context cancelled because the lease was lost.
	ErrNotHeld = errors.New("lock: not held (expired or taken by another holder)")

	// ErrBadTTL is returned for a TTL under 1 ms. Redis has no expiry finer
	// than a millisecond, and a zero TTL would make a lock that never
	// expires: a crashed holder would block everyone for good.
	ErrBadTTL = errors.New("lock: TTL must be at least 1ms")

	// ErrEmptyKey is returned when the key is empty.
	ErrEmptyKey = errors.New("lock: empty key")
)

var (
	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(releaseLua)

	//go:embed refresh.lua
	refreshLua    string
	refreshScript = redis.NewScript(refreshLua)
)

// Client is what the lock needs from go-redis: scripts, SET NX and DELEX.
// *redis.Client (single node or Sentinel failover), *redis.ClusterClient
// and redis.UniversalClient all satisfy it; tests can wrap one to inject
// faults.
type Client interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	DelExArgs(ctx context.Context, key string, a redis.DelExArgs) *redis.IntCmd
}

// Lock is a lease held on Key. Its zero value is not a lock; get one from
// Acquire or AcquireFenced. A nil *Lock is safe to Release (it returns
// ErrNotHeld), so `defer l.Release(ctx)` needs no check.
type Lock struct {
	Key   string
	Token string // random, 130 bits, fresh for every acquisition; never printed
	Fence int64  // set by AcquireFenced, 0 for Acquire

	// Attempts is how many times Acquire or AcquireFenced asked Redis
	// before it got the lock: 1 without contention.
	Attempts int

	rdb Client
}

// String names the lock without its token, so that logging a lock cannot
// leak what would let someone else release it.
func (l *Lock) String() string {
	if l == nil {
		return "lock <nil>"
	}
	if l.Fence > 0 {
		return fmt.Sprintf("lock %s (fence %d)", l.Key, l.Fence)
	}
	return "lock " + l.Key
}

// GoString hides the token from %#v too.
func (l *Lock) GoString() string { return l.String() }

// Acquire takes the lock on key for ttl with one SET key token NX PX ttl per
// attempt. While another holder has it, Acquire waits a random 5 to 15 ms
// (so that waiters do not retry in lockstep) and tries again, until it wins
// or ctx ends.
//
// It returns ErrBadTTL for a TTL under 1 ms and ErrEmptyKey for an empty
// key, both before talking to Redis; an error wrapping ctx.Err() and naming
// the key when ctx ends first; and a Redis error as soon as one happens
// (a broken connection is not retried until ctx ends).
func Acquire(ctx context.Context, rdb Client, key string, ttl time.Duration) (*Lock, error) {
	return acquire(ctx, rdb, key, ttl, func(token string) (bool, error) {
		return rdb.SetNX(ctx, key, token, ttl).Result()
	})
}

// acquire is the retry loop that Acquire and AcquireFenced share. try makes
// one attempt with the given token and reports whether it took the lock.
func acquire(ctx context.Context, rdb Client, key string, ttl time.Duration, try func(token string) (bool, error)) (*Lock, error) {
	if err := validate(key, ttl); err != nil {
		return nil, err
	}
	token := rand.Text()
	wait := Jitter{Min: 5 * time.Millisecond, Max: 15 * time.Millisecond}
	var timer *time.Timer
	for attempts := 1; ; attempts++ {
		won, err := try(token)
		if err != nil {
			// A failed call may still have run in Redis: ctx cut it short,
			// or the reply was lost to a timeout. Delete what might be ours
			// (token-checked, so nobody else's) so that no orphan lease
			// blocks the others until its TTL runs out.
			orphan := &Lock{Key: key, Token: token, rdb: rdb}
			orphan.ReleaseWith(ctx, ReleaseLua)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("lock: acquire %s: %w", key, ctx.Err())
			}
			return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
		}
		if won {
			return &Lock{Key: key, Token: token, Attempts: attempts, rdb: rdb}, nil
		}
		if timer == nil {
			timer = time.NewTimer(wait.NextBackoff())
			defer timer.Stop()
		} else {
			timer.Reset(wait.NextBackoff())
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock: acquire %s: gave up waiting: %w", key, ctx.Err())
		case <-timer.C:
		}
	}
}

func validate(key string, ttl time.Duration) error {
	if key == "" {
		return ErrEmptyKey
	}
	return CheckTTL(ttl)
}

// CheckTTL returns ErrBadTTL (wrapped, naming the value) for a TTL under
// 1 ms, and nil otherwise. Every call here that takes a TTL checks it with
// this; programs call it on their -ttl flag so that a bad value is refused
// before anything runs.
func CheckTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w, got %v", ErrBadTTL, ttl)
	}
	return nil
}

// Release gives the lock back: it deletes the key only if it still holds
// this lock's token, in one atomic step, using DELEX where the server has
// it (Redis 8.4 and later) and a Lua script otherwise. It runs even when
// ctx has ended, bounded by ReleaseTimeout (see there). It returns
// ErrNotHeld when the lease had expired or passed to another holder (then
// nothing is deleted), or the Redis error.
func (l *Lock) Release(ctx context.Context) error {
	return l.ReleaseWith(ctx, ReleaseAuto)
}

func (l *Lock) releaseLua(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.Key}, l.Token).Int()
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Refresh resets the lock's TTL to ttl if the key still holds this lock's
// token. It returns ErrBadTTL for a TTL under 1 ms, ErrNotHeld when the
// lease had expired or passed to another holder (it is not extended then),
// or the Redis error.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return ErrNotHeld
	}
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	n, err := refreshScript.Run(ctx, l.rdb, []string{l.Key}, l.Token, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("lock: refresh %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
