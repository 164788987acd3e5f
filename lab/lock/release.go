package lock

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/lock/internal/once"
)

// ReleaseTimeout bounds a release. A release runs after the work, often
// when the work's context has already ended (Ctrl-C, a deadline), and a
// lease left behind would block every other holder for the rest of its
// TTL: so a release keeps ctx's values but not its cancellation, and gives
// up after ReleaseTimeout instead.
const ReleaseTimeout = time.Second

// Release stops the watchdogs Watch started for this lock, then deletes
// the key if it holds this lock's token, in one atomic step: DELEX where
// the server has it (Redis 8.4 and later), a Lua script otherwise. It runs
// even when ctx has ended, bounded by ReleaseTimeout.
//
// It returns nil when it deleted the key; ErrNotHeld when Redis answered
// that the key was not this lock's (nothing is deleted then), or the Lock
// is nil or zero; an error matching ErrUnknown when it cannot tell (see
// below); or Redis's error.
//
// A release is not idempotent: sent twice, the second answers "not held"
// for a lock the first released. So Release sends its command once
// (go-redis would resend it after a lost reply) and does the one resend
// itself, knowing what its answer means: the key deleted now (nil), or
// not this lock's, which after a lost reply proves nothing (ErrUnknown).
// Either way the lock is no longer held, or runs out within its TTL.
func (l *Lock) Release(ctx context.Context) error {
	return l.release(ctx, true)
}

// ReleaseLua is Release without DELEX: it always runs release.lua. A fair
// lock's lease is released by its hand-off script either way.
func (l *Lock) ReleaseLua(ctx context.Context) error {
	return l.release(ctx, false)
}

// ReleaseAfter sends the commands queued in p, then the release, in one
// round trip, and returns what Release returns: under contention every
// waiter waits for the round trip between a holder's last write and its
// release, and this saves it. The commands in p run whether or not the
// lease is still held, as a write sent just before Release would; read
// their results from their commands. Nothing in p is sent twice: after a
// lost reply only the release is sent again, alone, as Release does. It
// sends nothing for a nil or zero Lock. On Redis Cluster, keys in p must
// share the lock key's hash tag ("balance:{wallet:42}" with
// "lock:{wallet:42}"): a pipeline that spans nodes has no order.
func (l *Lock) ReleaseAfter(ctx context.Context, p redis.Pipeliner) error {
	if err := l.held(); err != nil {
		return err
	}
	l.hold.watchdogs.stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	var release *redis.Cmd
	if l.hold.handoff != nil {
		release = l.hold.handoff.Queue(ctx, p, *l.hold.token)
	} else {
		release = once.EvalSha(ctx, p, releaseScript, []string{l.Key}, *l.hold.token)
	}
	p.Exec(ctx) // each command keeps its own result
	n, err := release.Int()
	switch {
	case err != nil && redis.HasErrorPrefix(err, "NOSCRIPT"):
		// The script cache was flushed: p's commands ran; release alone,
		// which loads the script again.
		return l.release(ctx, false)
	case once.Lost(err):
		return l.releaseAgain(ctx, false, fmt.Errorf("lock: release %s: %w", l.Key, unknownIfLost(err)))
	case err != nil:
		return fmt.Errorf("lock: release %s: %w", l.Key, err)
	case n == 0:
		return ErrNotHeld
	}
	return nil
}

func (l *Lock) release(ctx context.Context, delexOK bool) error {
	if err := l.held(); err != nil {
		return err
	}
	l.hold.watchdogs.stop()
	if l.hold.handoff != nil {
		return l.hold.handoff.Release(ctx, *l.hold.token)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	err := l.releaseOnce(ctx, delexOK)
	if errors.Is(err, ErrUnknown) {
		return l.releaseAgain(ctx, delexOK, err)
	}
	return err
}

// releaseAgain sends the release once more after the reply to the first
// was lost (first, matching ErrUnknown): nil when this one deleted the
// key, ErrUnknown otherwise (see Release).
func (l *Lock) releaseAgain(ctx context.Context, delexOK bool, first error) error {
	switch err := l.releaseOnce(ctx, delexOK); {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotHeld):
		return fmt.Errorf("%w; sent again, the release found the key no longer this lock's: the first deleted it, or the lease ran out", first)
	default:
		return fmt.Errorf("%w; sent again: %v", first, err)
	}
}

// releaseOnce sends the release once: nil when it deleted the key,
// ErrNotHeld when Redis answered that the key was not this lock's, and a
// lost reply as an error matching ErrUnknown.
func (l *Lock) releaseOnce(ctx context.Context, delexOK bool) error {
	if l.hold.handoff != nil {
		return l.hold.handoff.Release(ctx, *l.hold.token)
	}
	delex := false
	if delexOK {
		// When the probe's reply is lost, the script does: it runs on
		// every server.
		delex, _ = HasDelex(ctx, l.hold.rdb)
	}
	var cmd *redis.Cmd
	if delex {
		cmd = once.Send(ctx, l.hold.rdb, "delex", l.Key, "IFEQ", *l.hold.token)
	} else {
		cmd = once.Run(ctx, l.hold.rdb, releaseScript, releaseLua, []string{l.Key}, *l.hold.token)
	}
	n, err := cmd.Int()
	switch {
	case err != nil:
		return fmt.Errorf("lock: release %s: %w", l.Key, unknownIfLost(err))
	case n == 0:
		return ErrNotHeld
	}
	return nil
}

// unknownIfLost makes a lost reply's error match ErrUnknown.
func unknownIfLost(err error) error {
	if once.Lost(err) {
		return fmt.Errorf("%w: %w", ErrUnknown, err)
	}
	return err
}

// delexSupport remembers, per client, whether its server knows DELEX, so
// that the question costs one round trip per client, not one per release.
var delexSupport sync.Map // Client -> bool

// HasDelex reports whether the server behind rdb has DELEX (Redis 8.4 and
// later), the command Release then uses. The first call per client asks
// the server with a DELEX on a key that cannot exist (it deletes
// nothing); later calls answer from memory. A lost reply is not
// remembered: Release then uses the script, which every server has. A nil
// rdb returns an error matching ErrInvalid.
func HasDelex(ctx context.Context, rdb Client) (bool, error) {
	if isNil(rdb) {
		return false, errNilClient
	}
	// A wrapper that is not comparable cannot be a map key: ask every time.
	cacheable := reflect.TypeOf(rdb).Comparable()
	if cacheable {
		if v, ok := delexSupport.Load(rdb); ok {
			return v.(bool), nil
		}
	}
	probe := "walletlock:delex-probe:" + rand.Text()
	err := rdb.DelExArgs(ctx, probe, redis.DelExArgs{Mode: "IFEQ", MatchValue: "-"}).Err()
	if err != nil && !strings.Contains(strings.ToLower(err.Error()), "unknown command") {
		return false, err
	}
	if cacheable {
		delexSupport.Store(rdb, err == nil)
	}
	return err == nil, nil
}
