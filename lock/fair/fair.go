package fair

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
	"example.com/walletlock/lock/internal/core"
)

// This file is the waiting: a waiter queues in Redis and waits to be
// handed the lock. notify.go is how it hears that it was.

var (
	//go:embed queue.lua
	queueLua string
	//go:embed acquire.lua
	acquireLua    string
	acquireScript = redis.NewScript(queueLua + acquireLua)
	//go:embed release.lua
	releaseLua    string
	releaseScript = redis.NewScript(queueLua + releaseLua)
)

// ErrClosed is matched by the error of Acquire and AcquireFenced called
// after Close, or still waiting when Close ran.
var ErrClosed = errors.New("fair: lock closed")

const (
	// tick is how often a Lock's reader on a key renews the Lock's
	// presence there and serves the queue if its holder expired.
	tick = 100 * time.Millisecond
	// presence is how long a Lock stays present on a key without a tick:
	// hand-offs skip the waiters of a Lock absent longer (a process that
	// crashed, hangs or lost Redis). A live one misses two ticks first.
	presence = 3 * tick
	// kept is how long the queue, presence and stream of a key last
	// after their last write: longer than presence, so that they never
	// run out under a live waiter.
	kept = 2 * presence
)

// Client is what a fair lock needs from go-redis: what lock.Client has,
// plus XREAD, to read hand-offs. *redis.Client (single node or Sentinel),
// *redis.ClusterClient, *redis.Ring and redis.UniversalClient satisfy it.
type Client interface {
	lock.Client
	XRead(ctx context.Context, a *redis.XReadArgs) *redis.XStreamSliceCmd
}

// Lock is a fair lock: it hands out the same leases as lock.Acquire, but
// its waiters take turns (see the package doc). One Lock serves every key
// and goroutine of a process. While some of its goroutines wait on a key,
// it runs one reader for that key (see notify.go), which holds one pooled
// connection in a blocking read; Close stops them all.
//
// Each Lock has a random name, which its waiters' queue entries carry and
// its presence on a key is scored under.
type Lock struct {
	rdb  Client
	name string
	done chan struct{} // closed by Close

	mu      sync.Mutex
	closed  bool
	waiters map[string]*waiter // by handoffID
	keys    map[string]*group  // by lock key
	readers map[*group]bool    // the groups whose reader runs
	wg      sync.WaitGroup     // the readers
}

// New returns a fair lock on rdb. It starts nothing until a waiter needs
// to wait; call Close when done with it. A nil rdb gives a Lock whose
// Acquire returns an error matching lock.ErrInvalid.
func New(rdb Client) *Lock {
	return &Lock{rdb: rdb, name: rand.Text(), done: make(chan struct{}),
		waiters: map[string]*waiter{}, keys: map[string]*group{}, readers: map[*group]bool{}}
}

// Acquire takes the lock on key for ttl, waiting its turn behind the
// waiters that came first, until it holds the lock or ctx ends. Without
// contention it costs one script call; otherwise that call queues it, and
// it waits for a release to hand it the lock. A lease handed over began
// in the release's script; Acquire returns it as it is when it can prove
// that at most a tenth of ttl has gone since (the hand-off was read soon
// after it was written, see read), and otherwise renews it to ttl first,
// with SET ... IFEQ where the server has it (see renewed) or with the try
// script, one more round trip. So the lease has at least nine tenths of
// ttl left when Acquire returns. Attempts counts the calls made.
//
// It returns what lock.Acquire returns: an error matching
// lock.ErrInvalid before talking to Redis (and for a nil Lock);
// lock.ErrWrongType when the key holds something other than a lock; an
// error wrapping ctx.Err() naming the key when ctx ends first (it leaves
// the queue then, and passes the lock on if it was just handed over); and
// a Redis error at once when its first tries get no answer (see
// arrivalTries). Once queued it outlasts a dropped connection or a Redis
// restart: a try that got no answer is made again every tick, in a mode
// that queues the waiter again if Redis lost its entry. After Close it
// returns an error matching ErrClosed.
func (f *Lock) Acquire(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
	return f.acquire(ctx, key, ttl, false)
}

// AcquireFenced is Acquire plus a fencing token, as lock.AcquireFenced:
// taking the lock, on a try or by a hand-off, and incrementing the fence
// counter at lock.FenceKey(key) happen in one script. It also returns the
// errors of lock.AcquireFenced for a broken counter, without queueing.
func (f *Lock) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
	return f.acquire(ctx, key, ttl, true)
}

// arrivalTries is how many tries an arrival makes while none is answered
// before Acquire gives up: a dropped connection costs a try, not the
// Acquire. A Redis that cannot be reached at all is reported at once.
const arrivalTries = 3

func (f *Lock) acquire(ctx context.Context, key string, ttl time.Duration, fenced bool) (*lock.Lock, error) {
	var rdb Client
	if f != nil {
		rdb = f.rdb
	}
	ttl, err := core.Lend.Check(rdb, key, ttl)
	if err != nil {
		return nil, err
	}
	q, token := newFairKeys(key), rand.Text()
	wantFence := 0
	if fenced {
		wantFence = 1
	}
	entry := fmt.Sprintf("%s %d %d %s", token, ttl.Milliseconds(), wantFence, f.name)
	// Registered before the first try: a hand-off comes after a try that
	// queued us, and must find us listening (see answered).
	w, g := f.enter(q, token)
	if w == nil {
		return nil, closed(key)
	}
	defer f.exit(w, g)
	leave := func() { q.release(ctx, f.rdb, f.name, token, entry) }
	granted := func(attempts int, fence int64) *lock.Lock {
		return core.Lend.NewLock(f.rdb, key, token, ttl, attempts, fence, handoff{q, f.rdb, f.name}).(*lock.Lock)
	}

	mode, arrived := "join", false
	var lastErr error
	for attempts := 1; ; attempts++ {
		var r tried
		if mode == "join" && f.reading(g) {
			r, err = q.join(ctx, f.rdb, f.name, token, entry)
		} else {
			r, err = q.try(ctx, f.rdb, f.name, token, entry, mode)
		}
		again := false // ask again after a tick, not only when woken
		switch {
		case err == nil && r.won:
			return granted(attempts, r.fence), nil
		case err == nil:
			arrived, lastErr = true, nil
			if f.answered(ctx, w, g, r) {
				continue // a hand-off we may have missed: ask
			}
		case ctx.Err() != nil:
			leave()
			return nil, gaveUp(key, ctx.Err(), err)
		case refused(err):
			leave()
			f.pokeAll(g) // the others learn it at their next try
			return nil, err
		case !transient(err) || !arrived && (attempts == arrivalTries || !core.Lost(err)):
			leave()
			return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
		case !arrived:
			mode, lastErr = "rejoin", err
			continue // ask again at once, in a mode that queues us once
		default:
			again, lastErr = true, err
		}
		mode = "rejoin"
		h, ok, err := f.wait(ctx, w, again)
		switch {
		case errors.Is(err, ErrClosed):
			leave()
			return nil, closed(key)
		case err != nil:
			leave()
			return nil, gaveUp(key, err, lastErr)
		case ok && time.Since(h.since) <= ttl/10:
			return granted(attempts, h.fence), nil
		case ok && q.renewed(ctx, f.rdb, token, ttl):
			return granted(attempts+1, h.fence), nil
		}
	}
}

// wait blocks until w is handed the lock (ok, with its fence), is poked
// to ask again, or, when again is set, a tick has passed. It returns
// ctx.Err() when ctx ends, ErrClosed when the Lock closes.
func (f *Lock) wait(ctx context.Context, w *waiter, again bool) (h grant, ok bool, err error) {
	var after <-chan time.Time
	if again {
		t := time.NewTimer(tick)
		defer t.Stop()
		after = t.C
	}
	select {
	case h := <-w.grant:
		return h, h.fence >= 0, nil // -1: the next try says why
	case <-w.poke:
	case <-after:
	case <-ctx.Done():
		return h, false, ctx.Err()
	case <-f.done:
		return h, false, ErrClosed
	}
	return h, false, nil
}

// gaveUp is the error of a wait that ctx ended. last is the Redis error of
// the last try, if it failed, which may be why the wait was long.
func gaveUp(key string, cause, last error) error {
	if last != nil && !errors.Is(last, cause) {
		return fmt.Errorf("lock: acquire %s: gave up waiting (last try: %v): %w", key, last, cause)
	}
	return fmt.Errorf("lock: acquire %s: gave up waiting: %w", key, cause)
}

func closed(key string) error { return fmt.Errorf("lock: acquire %s: %w", key, ErrClosed) }

// refused reports whether err is Redis refusing a try because the key, or
// the fence counter, holds what it must not.
func refused(err error) bool {
	return errors.Is(err, lock.ErrWrongType) || errors.Is(err, lock.ErrFenceOverflow)
}

// transient reports whether a try that failed with err is worth repeating:
// no answer from Redis, or Redis saying it cannot serve yet.
func transient(err error) bool {
	var answer redis.Error
	if !errors.As(err, &answer) {
		return true
	}
	for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// fairKeys are the keys of the fair lock on one key, in the order the
// scripts take them (see queue.lua). Each starts as lock.FenceKey(key)
// without its ":fence", so all share the lock key's hash slot:
// "app:lock:{wallet:42}" has its queue at "app:lock:{wallet:42}:queue",
// "lock:7" at "{lock:7}:queue".
type fairKeys struct {
	keys []string // lock, queue, fence counter, presence, hand-off stream
}

func newFairKeys(key string) *fairKeys {
	tagged := strings.TrimSuffix(lock.FenceKey(key), ":fence")
	return &fairKeys{keys: []string{key, tagged + ":queue", lock.FenceKey(key), tagged + ":present", tagged + ":handoff"}}
}

func (q *fairKeys) stream() string { return q.keys[4] }

// tried is what one try or tick found out (see acquire.lua).
type tried struct {
	won    bool
	fence  int64  // when won
	holder string // otherwise: the handoffID of the holder, "" for none
	last   string // the stream's last ID when it ran
	lapsed bool   // our Lock's presence had run out: hand-offs may have skipped us
	sent   time.Time
}

// try runs acquire.lua once, in mode ("join", "rejoin" or "tick").
func (q *fairKeys) try(ctx context.Context, rdb Client, fair, token, entry, mode string) (tried, error) {
	sent := time.Now()
	reply, err := core.Run(ctx, rdb, acquireScript, queueLua+acquireLua, q.keys,
		kept.Milliseconds(), presence.Milliseconds(), fair, token, entry, mode).Slice()
	if err != nil {
		return tried{}, err
	}
	switch {
	case len(reply) == 2 && reply[0] == int64(1):
		if n, ok := reply[1].(int64); ok {
			return tried{won: true, fence: n}, nil
		}
	case len(reply) == 4 && reply[0] == int64(0):
		holder, ok1 := reply[1].(string)
		last, ok2 := reply[2].(string)
		if ok1 && ok2 {
			return tried{holder: holder, last: last, lapsed: reply[3] == int64(1), sent: sent}, nil
		}
	case len(reply) == 2:
		if _, ok := reply[0].(string); ok {
			return tried{}, core.Lend.FenceRefusal(q.keys[0], reply)
		}
	}
	return tried{}, fmt.Errorf("unexpected reply %v from acquire.lua", reply)
}

// join queues a waiter with a plain RPUSH, the cheapest way to arrive
// behind others, when its Lock's reader on the key runs already: that
// reader reads any hand-off to it and renews the presence. Only when the
// RPUSH found the queue empty does it run acquire.lua ("first"), to take
// the lock if it is free and give the new queue its expiry. The two are
// not one atomic step, and need not be: while an entry is queued, a
// release hands the lock to it rather than freeing it.
func (q *fairKeys) join(ctx context.Context, rdb Client, fair, token, entry string) (tried, error) {
	n, err := core.Send(ctx, rdb, "rpush", q.keys[1], entry).Int64() // sent twice, it would queue us twice
	if err != nil || n > 1 {
		return tried{}, err
	}
	return q.try(ctx, rdb, fair, token, entry, "first")
}

// renewed resets the TTL of a lock token was just handed with SET ...
// IFEQ, where the server has it (Redis 8.4 and later, found by
// lock.HasDelex), so that its lease is whole when Acquire returns. It
// reports false when it did not: the server lacks IFEQ, token no longer
// holds the lock, or no answer came. The waiter then asks again in mode
// rejoin, whose script renews the TTL too.
func (q *fairKeys) renewed(ctx context.Context, rdb Client, token string, ttl time.Duration) bool {
	if ifeq, _ := lock.HasDelex(ctx, rdb); !ifeq {
		return false
	}
	return core.Send(ctx, rdb, "set", q.keys[0], token, "IFEQ", token, "PX", ttl.Milliseconds()).Err() == nil
}

// handoff is how a lock that a Lock handed out is released (see
// core.Handoff): by release.lua, which passes it to the next waiter.
type handoff struct {
	q    *fairKeys
	rdb  Client
	fair string // the Lock's name
}

func (h handoff) Release(ctx context.Context, token string) error {
	return h.q.release(ctx, h.rdb, h.fair, token, "")
}

func (h handoff) Queue(ctx context.Context, p redis.Pipeliner, token string) *redis.Cmd {
	return core.EvalSha(ctx, p, releaseScript, h.q.keys, kept.Milliseconds(), presence.Milliseconds(), h.fair, token, "")
}

// release runs release.lua: with an entry, to leave the queue; without,
// as (*lock.Lock).Release does for a lock a Lock handed out. Like Release
// it keeps ctx's values but not its cancellation, gives up after
// lock.ReleaseTimeout, returns lock.ErrNotHeld when token did not hold
// the lock and an error matching lock.ErrUnknown when no answer came.
//
// A run whose reply was lost is sent again by release itself, not by
// go-redis: a second run does no harm (a token that gave the lock away
// never holds it again), but answers 0 when the first released the lock,
// which only release knows may have happened.
func (q *fairKeys) release(ctx context.Context, rdb Client, fair, token, entry string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lock.ReleaseTimeout)
	defer cancel()
	var unanswered error // why an earlier run may have run unanswered
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, tick) {
		n, err := core.Run(ctx, rdb, releaseScript, queueLua+releaseLua, q.keys, kept.Milliseconds(), presence.Milliseconds(), fair, token, entry).Int()
		if err == nil || !transient(err) {
			return q.outcome(n, err, unanswered)
		}
		if core.Lost(err) {
			unanswered = err
		}
		select {
		case <-ctx.Done():
			return q.outcome(0, err, unanswered)
		case <-time.After(pause):
		}
	}
}

// outcome is what a release whose last run answered n, or failed with
// err, returns; unanswered is the error of an earlier run that got no
// answer, after which an answer 0 is no proof the lease had run out.
func (q *fairKeys) outcome(n int, err, unanswered error) error {
	key := q.keys[0]
	switch {
	case core.Lost(err):
		return fmt.Errorf("lock: release %s: %w: %w", key, lock.ErrUnknown, err)
	case err != nil && unanswered != nil:
		return fmt.Errorf("lock: release %s: %w: %w (then: %w)", key, lock.ErrUnknown, unanswered, err)
	case err != nil:
		return fmt.Errorf("lock: release %s: %w", key, err)
	case n == 0 && unanswered != nil:
		return fmt.Errorf("lock: release %s: %w: the lock was gone when asked again after %w", key, lock.ErrUnknown, unanswered)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// handoffID is how a hand-off names the waiter it made the holder: the
// SHA-1 of its token, as queue.lua computes it.
func handoffID(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:])
}
