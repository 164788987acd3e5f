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
)

// ReleaseMethod chooses how Release deletes the key.
type ReleaseMethod string

const (
	// ReleaseAuto uses DELEX where the server has it, Lua otherwise.
	ReleaseAuto ReleaseMethod = "auto"
	// ReleaseLua runs release.lua: works on every Redis with scripting.
	ReleaseLua ReleaseMethod = "lua"
	// ReleaseDelex sends DELEX key IFEQ token, Redis 8.4 and later. go-redis
	// marks DelExArgs experimental, so its signature may still change.
	ReleaseDelex ReleaseMethod = "delex"
)

// ErrNoDelex is returned by ReleaseWith(ctx, ReleaseDelex) when the server
// has no DELEX command (it needs Redis 8.4 or later).
var ErrNoDelex = errors.New("lock: server has no DELEX (needs Redis 8.4 or later)")

// ParseReleaseMethod reads "auto", "lua" or "delex", as a -release flag
// would give it.
func ParseReleaseMethod(s string) (ReleaseMethod, error) {
	switch m := ReleaseMethod(s); m {
	case ReleaseAuto, ReleaseLua, ReleaseDelex:
		return m, nil
	}
	return "", fmt.Errorf("lock: unknown release method %q (want auto, lua or delex)", s)
}

// ReleaseTimeout bounds a release. A release runs after the work, often
// when the work's context has already ended (Ctrl-C, a deadline that ran
// out mid-spend), and a lease left behind would block every other holder
// for the rest of its TTL. So Release and ReleaseWith keep ctx's values but
// not its cancellation, and give up after ReleaseTimeout instead.
const ReleaseTimeout = time.Second

// ReleaseWith is Release with a chosen method. ReleaseDelex returns
// ErrNoDelex, and deletes nothing, when the server lacks the command. A
// lock from a Fair is always released by its hand-off script, whatever m
// says: deleting the key would leave its waiters to find out by asking.
func (l *Lock) ReleaseWith(ctx context.Context, m ReleaseMethod) error {
	if err := l.held(); err != nil {
		return err
	}
	l.watchdogs.stop()
	if l.handoff != nil {
		return l.handoff.release(ctx, l.rdb, l.Token, "")
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	switch m {
	case ReleaseLua:
		return l.releaseLua(ctx)
	case ReleaseAuto, ReleaseDelex:
		ok, err := SupportsDelex(ctx, l.rdb)
		if err != nil {
			return fmt.Errorf("lock: release %s: %w", l.Key, err)
		}
		if ok {
			return l.releaseDelex(ctx)
		}
		if m == ReleaseDelex {
			return ErrNoDelex
		}
		return l.releaseLua(ctx)
	}
	return fmt.Errorf("lock: unknown release method %q", m)
}

func (l *Lock) releaseDelex(ctx context.Context) error {
	n, err := l.rdb.DelExArgs(ctx, l.Key, redis.DelExArgs{Mode: "IFEQ", MatchValue: l.Token}).Result()
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

// SupportsDelex reports whether the server behind rdb has DELEX. The first
// call per client asks the server with a DELEX on a key that cannot exist
// (it deletes nothing); later calls answer from memory. A nil rdb returns
// ErrNilClient.
func SupportsDelex(ctx context.Context, rdb Client) (bool, error) {
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
