package fair

import (
	"context"
	"crypto/rand"
	_ "embed"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/lock/internal/once"
)

// Each script is queue.lua followed by its own file, joined once here:
// its source goes with every call (once.Run sends it after NOSCRIPT), and
// joined per call it was 11 KiB of garbage per acquire and release.
var (
	//go:embed queue.lua
	queueLua string
	//go:embed acquire.lua
	acquireLua    string
	acquireSrc    = queueLua + acquireLua
	acquireScript = redis.NewScript(acquireSrc)
	//go:embed release.lua
	releaseLua    string
	releaseSrc    = queueLua + releaseLua
	releaseScript = redis.NewScript(releaseSrc)
)

// ErrClosed is matched by the error of Acquire and AcquireFenced called
// after Close, or still waiting when Close ran.
var ErrClosed = errors.New("fair: lock closed")

const (
	tick     = 100 * time.Millisecond // how often a reader ticks (see Lock.tick)
	presence = 3 * tick               // a Lock not heard of for this long is skipped by hand-offs
	kept     = 2 * presence           // the queue, presence and stream expire this long after a write
)

// Client is what a fair lock needs from go-redis: lock.Client plus XREAD.
// *redis.Client (single node or Sentinel), *redis.ClusterClient,
// *redis.Ring and redis.UniversalClient satisfy it.
type Client interface {
	lock.Client
	XRead(ctx context.Context, a *redis.XReadArgs) *redis.XStreamSliceCmd
}

// Lock is a fair lock (see the package doc). One Lock serves every key and
// goroutine of a process. While its goroutines wait on a key it runs one
// reader there, which holds a pooled connection in a blocking read; Close
// stops them. Its random name marks its waiters' queue entries and its
// presence.
type Lock struct {
	rdb   Client
	reads Client // the readers' blocking XREADs; rdb unless NewReadingOn
	name  string
	done  chan struct{} // closed by Close

	mu      sync.Mutex
	closed  bool
	waiters map[string]*waiter // by lock.TokenID
	keys    map[string]*group  // by lock key
	readers map[*group]bool    // the groups whose reader runs
	wg      sync.WaitGroup     // the readers
}

// New returns a fair lock on rdb. It starts nothing until a waiter needs
// to wait. A nil rdb gives a Lock whose Acquire returns an error matching
// lock.ErrInvalid.
func New(rdb Client) *Lock { return NewReadingOn(rdb, rdb) }

// NewReadingOn is New, except that its readers' blocking XREADs go to
// reads (rdb if nil), every other command to rdb. A reader holds a
// connection for up to a tick, one per key waited on: on a small pool
// they would leave the releases that hand the lock over waiting for one.
// Give reads a pool of its own, a connection per key waited on at once.
func NewReadingOn(rdb, reads Client) *Lock {
	if reads == nil {
		reads = rdb
	}
	return &Lock{rdb: rdb, reads: reads, name: rand.Text(), done: make(chan struct{}),
		waiters: map[string]*waiter{}, keys: map[string]*group{}, readers: map[*group]bool{}}
}

// Acquire takes the lock on key for ttl, waiting its turn behind the
// waiters that came first, until it holds the lock or ctx ends. Without
// contention it costs one script call; otherwise it queues (with a plain
// RPUSH when its Lock reads the key already) and waits to be handed the
// lock. A lease handed over began in the release's script: Acquire renews
// it to ttl first (one more round trip) unless at most a tenth of ttl can
// have passed since (see read), so it has at least nine tenths of ttl
// left when Acquire returns. Attempts counts the calls made.
//
// It returns what lock.Acquire returns; when ctx ends first it leaves the
// queue, and passes the lock on if it was just handed over. Its first
// tries give up at once without an answer (see arrivalTries); once queued
// it outlasts a dropped connection and Redis losing its state (a restart,
// FLUSHDB): it asks again every tick while its tries fail, and queues
// again when its Lock's reader sees the queue lost its entry. After
// Close: ErrClosed.
func (f *Lock) Acquire(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
	return f.acquire(ctx, key, ttl, false)
}

// AcquireFenced is Acquire plus a fencing token, as lock.AcquireFenced:
// taking the lock, by a try or a hand-off, and incrementing the counter
// at lock.FenceKey(key) happen in one script. A broken counter gives
// lock.AcquireFenced's errors, without queueing.
func (f *Lock) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
	return f.acquire(ctx, key, ttl, true)
}

// arrivalTries is how many unanswered tries an arrival makes before it
// gives up: a dropped connection costs a try, not the Acquire.
const arrivalTries = 3

func (f *Lock) acquire(ctx context.Context, key string, ttl time.Duration, fenced bool) (*lock.Lock, error) {
	var rdb Client
	if f != nil {
		rdb = f.rdb
	}
	ttl, err := lock.CheckArgs(rdb, key, ttl)
	if err != nil {
		return nil, err
	}
	q, token, wantFence := newFairKeys(key), rand.Text(), 0
	if fenced {
		wantFence = 1
	}
	entry := fmt.Sprintf("%s %d %d %s", token, ttl.Milliseconds(), wantFence, f.name)
	// Registered before the first try: a hand-off comes after the try
	// that queued us, and must find us.
	w, g := f.enter(q, token, entry)
	if w == nil {
		return nil, closed(key)
	}
	defer f.exit(w, g)
	leave := func() { q.release(ctx, f.rdb, f.name, token, entry) }
	granted := func(attempts int, fence int64) *lock.Lock {
		return lock.Adopt(f.rdb, key, token, attempts, fence, handoff{q, f.rdb, f.name})
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
		again := false // ask again after a tick, even if not woken
		switch {
		case err == nil && r.won:
			return granted(attempts, r.fence), nil
		case err == nil:
			arrived, lastErr = true, nil
			if f.answered(w, g, r) {
				mode = "rejoin"
				continue
			}
		case ctx.Err() != nil:
			leave()
			return nil, gaveUp(key, ctx.Err(), err)
		case errors.Is(err, lock.ErrWrongType) || errors.Is(err, lock.ErrFenceOverflow):
			leave()
			f.mu.Lock()
			pokeAll(g) // the others learn it at their next try
			f.mu.Unlock()
			return nil, err
		case !transient(err) || !arrived && (attempts == arrivalTries || !once.Lost(err)):
			leave()
			return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
		case !arrived:
			mode, lastErr = "rejoin", err
			continue // at once, in a mode that queues us once
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
		} // else a try in mode rejoin, which renews a lease handed over
	}
}

// wait blocks until w is handed the lock (ok), is poked to ask again, or,
// when again is set, a tick has passed.
func (f *Lock) wait(ctx context.Context, w *waiter, again bool) (h grant, ok bool, err error) {
	var after <-chan time.Time
	if again {
		after = time.After(tick) // collected once past, fired or not
	}
	select {
	case h := <-w.grant:
		return h, h.fence >= 0, nil // -1: the next try says why
	case <-w.poke:
	case <-after:
	case <-ctx.Done():
		err = ctx.Err()
	case <-f.done:
		err = ErrClosed
	}
	return h, false, err
}

// gaveUp is the error of a wait that ctx ended; last is the Redis error
// of the last try, if it failed, which may be why the wait was long.
func gaveUp(key string, cause, last error) error {
	if last != nil && !errors.Is(last, cause) {
		return fmt.Errorf("lock: acquire %s: gave up waiting (last try: %v): %w", key, last, cause)
	}
	return fmt.Errorf("lock: acquire %s: gave up waiting: %w", key, cause)
}

func closed(key string) error { return fmt.Errorf("lock: acquire %s: %w", key, ErrClosed) }

// transient reports whether a try that failed with err is worth repeating:
// no answer from Redis, or Redis saying it cannot serve yet.
func transient(err error) bool {
	if _, answered := errors.AsType[redis.Error](err); !answered {
		return true
	}
	return slices.ContainsFunc([]string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN"},
		func(p string) bool { return redis.HasErrorPrefix(err, p) })
}

// fairKeys are the keys of the fair lock on one key, as the scripts take
// them (see queue.lua). Each starts as lock.FenceKey(key) without its
// ":fence", so all share the lock key's hash slot.
type fairKeys struct{ keys []string }

func newFairKeys(key string) *fairKeys {
	t := strings.TrimSuffix(lock.FenceKey(key), ":fence")
	return &fairKeys{[]string{key, t + ":queue", lock.FenceKey(key), t + ":present", t + ":handoff"}}
}

// tried is what one try or tick found out (see acquire.lua).
type tried struct {
	won   bool
	fence int64     // when won
	last  string    // the stream's last ID when it ran, "" when unknown
	gone  []int     // a tick's: which of the entries it was given the queue lacks (0-based)
	sent  time.Time // when it was sent
}

// try runs acquire.lua once, in mode "join", "first", "rejoin" or "tick";
// a tick passes the entries of its Lock's queued waiters as queued.
func (q *fairKeys) try(ctx context.Context, rdb Client, fair, token, entry, mode string, queued ...string) (tried, error) {
	sent := time.Now()
	args := []any{kept.Milliseconds(), presence.Milliseconds(), fair, token, entry, mode}
	for _, e := range queued {
		args = append(args, e)
	}
	reply, err := once.Run(ctx, rdb, acquireScript, acquireSrc, q.keys, args...).Slice()
	if err != nil {
		return tried{}, err
	}
	switch {
	case len(reply) == 2 && reply[0] == int64(1):
		if n, ok := reply[1].(int64); ok {
			return tried{won: true, fence: n}, nil
		}
	case len(reply) == 3 && reply[0] == int64(0):
		last, ok1 := reply[1].(string)
		positions, ok2 := reply[2].([]any)
		if ok1 && ok2 {
			r := tried{last: last, sent: sent}
			for _, p := range positions {
				if i, ok := p.(int64); ok && i >= 1 && int(i) <= len(queued) {
					r.gone = append(r.gone, int(i)-1)
				}
			}
			return r, nil
		}
	case len(reply) == 2:
		if _, ok := reply[0].(string); ok {
			return tried{}, lock.FenceRefusal(q.keys[0], q.keys[2], reply)
		}
	}
	return tried{}, fmt.Errorf("unexpected reply %v from acquire.lua", reply)
}

// join queues a waiter with a plain RPUSH, the cheapest way to arrive,
// when its Lock's reader on the key runs already (it reads the hand-off
// and renews the presence). When the RPUSH found the queue empty it runs
// acquire.lua ("first") to take the lock if free and give the queue its
// expiry. The two need not be atomic: while an entry is queued, a release
// hands the lock to it rather than freeing it.
func (q *fairKeys) join(ctx context.Context, rdb Client, fair, token, entry string) (tried, error) {
	n, err := once.Send(ctx, rdb, "rpush", q.keys[1], entry).Int64() // twice would queue us twice
	if err != nil || n > 1 {
		return tried{}, err
	}
	return q.try(ctx, rdb, fair, token, entry, "first")
}

// renewed resets the TTL of a lock token was just handed with SET ...
// IFEQ where the server has it (Redis 8.4 and later, as lock.HasDelex
// finds). When it did not, the waiter asks in mode rejoin, whose script
// renews the TTL too.
func (q *fairKeys) renewed(ctx context.Context, rdb Client, token string, ttl time.Duration) bool {
	if ifeq, _ := lock.HasDelex(ctx, rdb); !ifeq {
		return false
	}
	return once.Send(ctx, rdb, "set", q.keys[0], token, "IFEQ", token, "PX", ttl.Milliseconds()).Err() == nil
}

// handoff releases a lock a Lock handed out (a lock.Handoff): by
// release.lua, which passes it to the next waiter.
type handoff struct {
	q    *fairKeys
	rdb  Client
	fair string // the Lock's name
}

func (h handoff) Release(ctx context.Context, token string) error {
	return h.q.release(ctx, h.rdb, h.fair, token, "")
}

func (h handoff) Queue(ctx context.Context, p redis.Pipeliner, token string) *redis.Cmd {
	return once.EvalSha(ctx, p, releaseScript, h.q.keys, kept.Milliseconds(), presence.Milliseconds(), h.fair, token, "")
}

// release runs release.lua: with an entry, to leave the queue; without,
// as (*lock.Lock).Release, with its errors and its ReleaseTimeout. A run
// whose reply was lost is sent again here: a second run does no harm, but
// answers 0 when the first released the lock, which only release knows.
func (q *fairKeys) release(ctx context.Context, rdb Client, fair, token, entry string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lock.ReleaseTimeout)
	defer cancel()
	var unanswered error // why an earlier run may have run unanswered
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, tick) {
		n, err := once.Run(ctx, rdb, releaseScript, releaseSrc, q.keys,
			kept.Milliseconds(), presence.Milliseconds(), fair, token, entry).Int()
		if err == nil || !transient(err) || ctx.Err() != nil {
			return q.outcome(n, err, unanswered)
		}
		if once.Lost(err) {
			unanswered = err
		}
		time.Sleep(pause)
	}
}

// outcome is what a release whose last run answered n, or failed with
// err, returns; after an unanswered run, 0 is no proof the lease ran out.
func (q *fairKeys) outcome(n int, err, unanswered error) error {
	key := q.keys[0]
	switch {
	case once.Lost(err):
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
