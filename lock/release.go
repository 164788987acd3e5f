package lock

import (
	"context"
	"crypto/rand"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReleaseTimeout bounds a release. A release runs after the work, often
// when the work's context has already ended (Ctrl-C, a deadline that ran
// out mid-spend), and a lease left behind would block every other holder
// for the rest of its TTL. So Release and ReleaseLua keep ctx's values but
// not its cancellation, and give up after ReleaseTimeout instead.
const ReleaseTimeout = time.Second

// Release gives the lock back: it compares the key's value with this lock's
// token and deletes the key on a match, in one atomic step, using DELEX where the server has
// it (Redis 8.4 and later) and a Lua script otherwise. It first stops the
// watchdogs that Watch started for this lock. It runs even when ctx has
// ended, bounded by ReleaseTimeout (see there). It returns ErrNotHeld when
// the lease had expired or passed to another holder (then nothing is
// deleted) or the Lock is nil or zero, or the Redis error.
func (l *Lock) Release(ctx context.Context) error {
	return l.release(ctx, true)
}

// ReleaseLua is Release without DELEX: it always runs release.lua, which
// every Redis with scripting has, so that a program can show the script at
// work on a server that has DELEX too. A lock from a Fair is released by its
// hand-off script either way: deleting the key would leave its waiters to
// find out by asking.
func (l *Lock) ReleaseLua(ctx context.Context) error {
	return l.release(ctx, false)
}

// ReleaseAfter sends the commands queued in p, then the release, in one
// round trip, and returns what Release returns. Under contention the
// round trip between a holder's last write and its release is one that
// every waiter waits for; this saves it. The commands in p run whether
// or not the lease is still held, exactly as a write sent just before
// Release would: the lease protects them only as far as Watch and a fence
// do. Read their results from the commands p returned: a command that
// fails does not stop the release. Like Release, it keeps ctx's values
// but not its cancellation, and gives up after ReleaseTimeout; it sends
// nothing for a nil or zero Lock. On Redis Cluster, keys in p must share
// the lock key's hash tag, as "balance:{wallet:42}" does with
// "lock:{wallet:42}": a pipeline that spans nodes has no order.
func (l *Lock) ReleaseAfter(ctx context.Context, p redis.Pipeliner) error {
	if err := l.held(); err != nil {
		return err
	}
	l.watchdogs.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	var release *redis.Cmd
	if l.handoff != nil {
		release = fairReleaseScript.EvalSha(ctx, p, l.handoff.keys, l.handoff.publish, l.token, "")
	} else {
		release = releaseScript.EvalSha(ctx, p, []string{l.Key}, l.token)
	}
	p.Exec(ctx) // each command keeps its own result
	n, err := release.Int()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		// The script cache was flushed: p's commands ran; release alone,
		// which loads the script again.
		return l.release(ctx, false)
	}
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (l *Lock) release(ctx context.Context, delexOK bool) error {
	if err := l.held(); err != nil {
		return err
	}
	l.watchdogs.stop()
	if l.handoff != nil {
		return l.handoff.release(ctx, l.rdb, l.token, "")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	if delexOK {
		ok, err := supportsDelex(ctx, l.rdb)
		if err != nil {
			return fmt.Errorf("lock: release %s: %w", l.Key, err)
		}
		if ok {
			return l.releaseDelex(ctx)
		}
	}
	n, err := releaseScript.Run(ctx, l.rdb, []string{l.Key}, l.token).Int()
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

func (l *Lock) releaseDelex(ctx context.Context) error {
	n, err := l.rdb.DelExArgs(ctx, l.Key, redis.DelExArgs{Mode: "IFEQ", MatchValue: l.token}).Result()
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// delexSupport remembers, per client, whether its server knows DELEX, so
// that the question costs one round trip per client, not one per release.
var delexSupport sync.Map // Client -> bool

// supportsDelex reports whether the server behind rdb has DELEX. The first
// call per client asks the server with a DELEX on a key that cannot exist
// (it deletes nothing); later calls answer from memory. A nil rdb returns
// ErrNilClient.
func supportsDelex(ctx context.Context, rdb Client) (bool, error) {
	if isNil(rdb) {
		return false, ErrNilClient
	}
	// A wrapper that is not comparable cannot be a map key: ask every time.
	cacheable := reflect.TypeOf(rdb).Comparable()
	if cacheable {
		if v, ok := delexSupport.Load(rdb); ok {
			return v.(bool), nil
		}
	}
	remember := func(ok bool) {
		if cacheable {
			delexSupport.Store(rdb, ok)
		}
	}
	probe := "walletlock:delex-probe:" + rand.Text()
	err := rdb.DelExArgs(ctx, probe, redis.DelExArgs{Mode: "IFEQ", MatchValue: "-"}).Err()
	switch {
	case err == nil:
		remember(true)
		return true, nil
	case isUnknownCommand(err):
		remember(false)
		return false, nil
	default:
		return false, err
	}
}

func isUnknownCommand(err error) bool {
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "unknown command")
}
