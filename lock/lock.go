// Package lock is a lease on one Redis key: SET key token NX PX ttl takes
// it, and a script that checks the token before it deletes gives it back.
// It grows by chapter: lock.go (step 2), watch.go (step 3), fence.go
// (step 5).
package lock

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	ErrNotHeld = errors.New("lock: not held (expired, or taken by someone else)")
	ErrBadTTL  = errors.New("lock: TTL must be at least 1ms")
)

// Lock is a lease that Acquire took.
type Lock struct {
	rdb   Client
	Key   string
	Token string // random, and ours alone: the key holds it while we hold the lock
	Fence int64  // set by AcquireFenced (step 5), zero otherwise
}

// Acquire takes the lock at key for ttl with a new random token, trying
// again every 5 to 15 ms while someone else holds it, until ctx ends.
//
// A ttl under 1 ms is refused before any call (ErrBadTTL): go-redis sends
// a zero TTL as no expiry at all, a lock that never ends. When SET's reply
// is lost (a timeout, or ctx ending in flight), Acquire returns the error,
// and the key may hold our token until ttl runs out. A key of another type
// (a hash, say) looks held to SET NX: Acquire waits until ctx ends.
func Acquire(ctx context.Context, rdb Client, key string, ttl time.Duration) (*Lock, error) {
	if ttl < time.Millisecond {
		return nil, ErrBadTTL
	}
	token := rand.Text() // 26 characters, 130 random bits
	for {
		ok, err := rdb.SetNX(ctx, key, token, ttl).Result() // SET key token NX PX ttl
		if err != nil {
			return nil, failed(ctx, key, err)
		}
		if ok {
			return &Lock{rdb: rdb, Key: key, Token: token}, nil
		}
		if err := pause(ctx); err != nil {
			return nil, failed(ctx, key, err)
		}
	}
}

// Release deletes the lock only while it holds our token (release.lua), so
// a holder whose lease expired cannot delete the next holder's lock: it
// gets ErrNotHeld. Redis 8.4 and later do the same in one command, DELEX
// key IFEQ token.
//
// Send it on a context that outlives the work's: a release sent on a
// cancelled context never reaches Redis, and the key stays until its TTL
// runs out. A lost reply is an error that is not ErrNotHeld: the key may
// be gone or not, and it expires within its TTL either way.
func (l *Lock) Release(ctx context.Context) error {
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.Key}, l.Token).Int()
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Client is what the lock asks of go-redis, and nothing more: SET NX and
// scripts. Every go-redis client has both, whether it talks to one server
// or to several, and a test can stand in one that fails on purpose. A lock
// that needs another command (GET, DEL) adds it here.
type Client interface {
	redis.Scripter
	SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd
}

//go:embed release.lua
var ReleaseLua string // the lab's hardened lock sends it too

// Run sends EVALSHA, and EVAL when the server's script cache is empty
// (after a restart or a failover).
var releaseScript = redis.NewScript(ReleaseLua)

// failed is the error of an acquire that err ended. When ctx has run out,
// it says so even where go-redis saw only its socket's deadline.
func failed(ctx context.Context, key string, err error) error {
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) && !errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("%w: %w", context.DeadlineExceeded, err)
	}
	return fmt.Errorf("lock: acquire %s: %w", key, err)
}

// pause waits 5 to 15 ms, or until ctx ends. The wait is random so that
// waiters do not all try again at once; step 4 measures what that costs.
func pause(ctx context.Context) error {
	t := time.NewTimer(5*time.Millisecond + mrand.N(10*time.Millisecond))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
