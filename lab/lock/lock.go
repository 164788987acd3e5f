package lock

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	rootlock "example.com/walletlock/lock"
)

var (
	// ErrNotHeld is returned by Release and Refresh when the lock expired or
	// now holds another holder's token, and is the cause of a Watch
	// context cancelled because the lease was lost. It is the root's lock's
	// error, so that code written for that lock matches it unchanged.
	ErrNotHeld = rootlock.ErrNotHeld

	// ErrUnknown is matched by the error of Release and Refresh when the
	// reply was lost (a broken connection, a timeout): Redis may have run
	// the command or not, where ErrNotHeld is Redis's answer.
	ErrUnknown = errors.New("lock: outcome unknown: the reply was lost, the command may have run")

	// ErrInvalid is matched by the error of every call given what no
	// lock can be made of, before it talks to Redis: a nil client (a nil
	// interface or a nil *redis.Client), an empty key, a key with a "}"
	// but no hash tag such as "lock}7" (its fence counter and a fair
	// lock's queue could not share its Redis Cluster slot, see FenceKey),
	// or a TTL under 1 ms (a zero TTL would make a lock that never
	// expires). The error says which in one line, naming the key or the
	// TTL: "lock: TTL must be at least 1ms, got 0s".
	ErrInvalid = errors.New("lock: invalid argument")

	// ErrBadTTL is matched, as ErrInvalid is, by the error of a call given
	// a TTL under 1 ms: the root's lock's error for it.
	ErrBadTTL = rootlock.ErrBadTTL

	// ErrWrongType is matched by the error of Acquire and AcquireFenced
	// when the key holds something other than a lock, such as a hash,
	// which no holder will ever release; the error names its type.
	// AcquireFenced and RaiseFence also return it for a fence counter that
	// holds something other than a whole number.
	ErrWrongType = errors.New("lock: key holds something other than a lock")

	// ErrTaken is matched by the error of TryAcquire when another holder
	// has the lock: Redis answered, and nothing was taken.
	ErrTaken = errors.New("lock: held by another holder")
)

var (
	errNilClient     = errorIs{"lock: nil client", ErrInvalid}
	errEmptyKey      = errorIs{"lock: empty key", ErrInvalid}
	errEmptyFenceKey = errorIs{"lock: empty fence key", ErrInvalid}
	// What a Lock that no Acquire made (such as Lock{}) answers.
	errZeroLock = errorIs{"lock: not held: a Lock must come from Acquire or AcquireFenced", ErrNotHeld}
)

// errorIs is an error with a message of its own that errors.Is matches to
// one of the sentinels above (and, for a bad TTL, to ErrBadTTL too).
type errorIs struct {
	msg    string
	target error
}

func (e errorIs) Error() string { return e.msg }
func (e errorIs) Is(target error) bool {
	return target == e.target || target == ErrBadTTL && strings.HasPrefix(e.msg, "lock: TTL ")
}

var (
	releaseLua    = rootlock.ReleaseLua // one compare-and-delete script: the article's
	releaseScript = redis.NewScript(releaseLua)
	refreshScript = redis.NewScript(rootlock.RefreshLua)

	//go:embed key_type.lua
	keyTypeLua    string
	keyTypeScript = redis.NewScript(keyTypeLua)
)

// Client is what the lock needs from go-redis: the root's lock.Client
// (scripts and SET NX), DELEX, and Process, through which Release sends
// its command once (see Release). *redis.Client (single node or Sentinel
// failover), *redis.ClusterClient and redis.UniversalClient all satisfy
// it; tests can wrap one to inject faults.
type Client interface {
	rootlock.Client
	DelExArgs(ctx context.Context, key string, a redis.DelExArgs) *redis.IntCmd
	Process(ctx context.Context, cmd redis.Cmder) error
}

// Lock is a lease held on Key; get one from Acquire or AcquireFenced. A
// nil *Lock and a zero Lock are safe to Release, Refresh and Watch (they
// answer ErrNotHeld), so `defer l.Release(ctx)` needs no check.
//
// The token lets a holder release the lock, so no way of printing or
// encoding a Lock shows it: JSON, XML and gob skip unexported fields, and
// fmt shows a pointer inside a value as an address, or under %s and %q
// what it points to, one level down only: hence the token's own pointer.
// ID names the holder in a log line.
type Lock struct {
	Key   string
	Fence int64 // set by AcquireFenced, 0 for Acquire

	// Attempts is how many times Acquire or AcquireFenced asked Redis
	// before it got the lock: 1 without contention.
	Attempts int

	hold *hold // nil for a Lock that no Acquire made
}

// hold is what a Lock keeps to itself (see Lock for the token's pointer).
type hold struct {
	token     *string   // random, 130 bits, fresh for every acquisition; never shown (see ID)
	rdb       Client    // where the lease lives
	handoff   Handoff   // set by a fair lock: Release hands the lock to the next waiter
	watchdogs watchdogs // what Watch started, for Release to stop first
}

// newLock returns the lock that an acquisition of key with token took.
func newLock(rdb Client, key, token string, attempts int) *Lock {
	return &Lock{Key: key, Attempts: attempts, hold: &hold{token: &token, rdb: rdb}}
}

// ID names this holding of the lock without giving its token away: the
// hex SHA-1 of the token, which is also what a fair lock publishes when it
// hands the lock over. A nil or zero Lock has the ID "".
func (l *Lock) ID() string {
	if l == nil || l.hold == nil {
		return ""
	}
	return TokenID(*l.hold.token)
}

// TokenID is the ID of the holding that token names (see ID): a fair
// lock's hand-off names its waiter by it, as queue.lua computes it.
func TokenID(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:])
}

// held returns the error a nil or zero Lock answers with, nil for a Lock
// that Acquire or AcquireFenced made.
func (l *Lock) held() error {
	switch {
	case l == nil:
		return ErrNotHeld
	case l.hold == nil:
		return errZeroLock
	}
	return nil
}

// Acquire takes the lock on key for ttl with one SET key token NX PX ttl per
// attempt, sleeping 5 to 15 ms at random between attempts (equal sleeps
// would wake every waiter at once), until it holds the lock or ctx is done.
// A fair lock (package lock/fair) serves waiters in turn instead. The ttl
// is rounded up to whole milliseconds (see CheckTTL).
//
// It returns an error matching ErrInvalid before talking to Redis (see
// ErrInvalid); one matching ErrWrongType at once when the key holds
// something other than a lock, which no holder would ever release; one
// wrapping ctx.Err() and naming the key when ctx ends first; and a Redis
// error as soon as one happens (a broken connection is not retried).
func Acquire(ctx context.Context, rdb Client, key string, ttl time.Duration) (*Lock, error) {
	checked := false
	return acquire(ctx, rdb, key, ttl, func(token string, ttl time.Duration) (bool, error) {
		won, err := rdb.SetNX(ctx, key, token, ttl).Result()
		if won || err != nil || checked {
			return won, err
		}
		// SET NX fails in silence on a key of another type, just as on a
		// lock held by someone else. Ask once which of the two it is.
		checked = true
		return false, checkLockType(ctx, rdb, key)
	})
}

// TryAcquire takes the lock on key for ttl if nobody holds it, with one
// SET key token NX PX ttl, and never waits (the load test's run lease). It
// returns Acquire's errors, and one matching ErrTaken at once when another
// holder has the lock.
//
// A SET NX whose reply was lost may have landed, and go-redis's resend
// then finds the lock held: by this very call. So when SET NX fails or
// finds the lock held, TryAcquire asks with Refresh (which sets the TTL
// SET NX would have set) whether the key holds its token: then the lock
// is its own after all.
func TryAcquire(ctx context.Context, rdb Client, key string, ttl time.Duration) (*Lock, error) {
	ttl, err := CheckArgs(rdb, key, ttl)
	if err != nil {
		return nil, err
	}
	l := newLock(rdb, key, rand.Text(), 1)
	won, err := rdb.SetNX(ctx, key, *l.hold.token, ttl).Result()
	if won {
		return l, nil
	}
	if err == nil {
		// SET NX fails in silence on a key of another type (see Acquire).
		if err := checkLockType(ctx, rdb, key); err != nil {
			return nil, err
		}
	}
	switch rerr := l.Refresh(ctx, ttl); {
	case rerr == nil:
		return l, nil // the SET landed: its reply, or a resend's, said otherwise
	case err != nil:
		return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
	case !errors.Is(rerr, ErrNotHeld):
		return nil, fmt.Errorf("lock: acquire %s: %w", key, rerr)
	}
	return nil, errorIs{fmt.Sprintf("lock: acquire %s: held by another holder", key), ErrTaken}
}

// DeleteIf deletes key if it holds value, in one atomic step, with the
// script Release uses (release.lua), and reports whether it did: for a
// caller that holds no *Lock but knows what it may have written (the load
// test cleans up after bsm/redislock with it). go-redis resends a script
// whose reply was lost, and the resend reports false for a key the first
// deleted: use it to clean up, not to learn who held the key.
func DeleteIf(ctx context.Context, rdb redis.Scripter, key, value string) (bool, error) {
	if isNil(rdb) {
		return false, errNilClient
	}
	n, err := releaseScript.Run(ctx, rdb, []string{key}, value).Int()
	if err != nil {
		return false, fmt.Errorf("lock: delete %s if it holds a value: %w", key, unknownIfLost(err))
	}
	return n == 1, nil
}

// checkLockType returns an error matching ErrWrongType when key holds
// anything but a string (or nothing). It asks with a script because
// Client, kept narrow for wrappers and fakes, has no Type method.
func checkLockType(ctx context.Context, rdb Client, key string) error {
	t, err := keyTypeScript.Run(ctx, rdb, []string{key}).Text()
	if err != nil {
		return err
	}
	if t != "none" && t != "string" {
		return wrongType(key, t)
	}
	return nil
}

func wrongType(key, typ string) error {
	return errorIs{fmt.Sprintf("lock: acquire %s: the key holds a %s, not a lock", key, typ), ErrWrongType}
}

// acquire is the retry loop of Acquire and AcquireFenced. try makes one
// attempt with token and ttl and reports whether it took the lock.
func acquire(ctx context.Context, rdb Client, key string, ttl time.Duration, try func(token string, ttl time.Duration) (bool, error)) (*Lock, error) {
	ttl, err := CheckArgs(rdb, key, ttl)
	if err != nil {
		return nil, err
	}
	token := rand.Text()
	var wait Jitter // 5 to 15 ms
	for attempts := 1; ; attempts++ {
		won, err := try(token, ttl)
		if _, refused := errors.AsType[errorIs](err); refused {
			return nil, err // Redis answered, and changed nothing
		}
		if err != nil {
			// A failed call may still have run in Redis: ctx cut it short,
			// or the reply was lost to a timeout. Delete what might be ours
			// (token-checked, so nobody else's) so that no orphan lease
			// blocks the others until its TTL runs out. One try, bounded as
			// a release is (see ReleaseTimeout).
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
			newLock(rdb, key, token, 0).releaseOnce(rctx, false)
			cancel()
			if ctx.Err() != nil {
				return nil, fmt.Errorf("lock: acquire %s: %w", key, ctx.Err())
			}
			if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
				// go-redis's socket deadline, which is ctx's, may fire an
				// instant before ctx says it ended.
				return nil, fmt.Errorf("lock: acquire %s: %w: %w", key, context.DeadlineExceeded, err)
			}
			return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
		}
		if won {
			return newLock(rdb, key, token, attempts), nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("lock: acquire %s: gave up waiting: %w", key, ctx.Err())
		case <-time.After(wait.NextBackoff()): // collected once past, fired or not
		}
	}
}

// CheckArgs refuses, before anything talks to Redis, what Acquire refuses,
// with the same errors, and returns ttl as Acquire sends it: rounded up to
// whole milliseconds (see CheckTTL). Locks built on this one (lock/fair,
// the load test's redislock) call it to refuse what it refuses.
func CheckArgs(rdb any, key string, ttl time.Duration) (time.Duration, error) {
	if isNil(rdb) {
		return 0, errNilClient
	}
	if _, err := slotPrefix(key); err != nil {
		return 0, err
	}
	if err := CheckTTL(ttl); err != nil {
		return 0, err
	}
	return wholeMillis(ttl), nil
}

// isNil reports whether c is nil, or an interface holding a nil pointer
// (a `var rdb *redis.Client` never assigned), which go-redis would panic
// on at its first call.
func isNil(c any) bool {
	if c == nil {
		return true
	}
	switch v := reflect.ValueOf(c); v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return v.IsNil()
	}
	return false
}

// CheckTTL returns an error matching ErrInvalid, naming the value, for a
// TTL under 1 ms, and nil otherwise; programs call it on their -ttl flag.
//
// A TTL that passes is sent to Redis in whole milliseconds, the finest
// expiry Redis has, rounded up (1.9ms becomes 2ms): a lease shorter than
// asked could expire while its holder still counts on it.
func CheckTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return errorIs{fmt.Sprintf("lock: TTL must be at least 1ms, got %v", ttl), ErrInvalid}
	}
	return nil
}

// wholeMillis rounds ttl up to a whole number of milliseconds (see
// CheckTTL).
func wholeMillis(ttl time.Duration) time.Duration {
	r := ttl % time.Millisecond
	switch {
	case r == 0:
		return ttl
	case ttl > math.MaxInt64-time.Millisecond:
		return ttl - r // 292 years: no room to round up, none needed
	}
	return ttl + time.Millisecond - r
}

// Refresh sets the lock's TTL to ttl again (rounded up, see CheckTTL) if
// the key still holds this lock's token. It returns an error matching
// ErrInvalid and ErrBadTTL for a ttl under 1 ms, before talking to Redis;
// ErrNotHeld when the lease had expired or passed to another holder, or
// the Lock is nil or zero; an error matching ErrUnknown when no answer
// came (the lease may have been extended or not); or Redis's error.
//
// Unlike Release, Refresh may be sent twice (go-redis resends a command
// whose reply was lost): refresh.lua run twice finds its token twice and
// resets the same TTL.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if err := l.held(); err != nil {
		return err
	}
	if err := CheckTTL(ttl); err != nil {
		return err
	}
	n, err := refreshScript.Run(ctx, l.hold.rdb, []string{l.Key}, *l.hold.token, wholeMillis(ttl).Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("lock: refresh %s: %w", l.Key, unknownIfLost(err))
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}
