package fair

import (
	"context"
	"crypto/rand"
	"crypto/sha1"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
	"example.com/walletlock/lock/internal/core"
)

// This file is the waiting: waiters queue in Redis and a release hands
// the lock to the first of them. notify.go is how a waiter hears that it
// was handed the lock.

var (
	//go:embed queue.lua
	fairQueueLua string

	//go:embed acquire.lua
	fairAcquireLua    string
	fairAcquireScript = redis.NewScript(fairQueueLua + fairAcquireLua)

	//go:embed release.lua
	fairReleaseLua    string
	fairReleaseScript = redis.NewScript(fairQueueLua + fairReleaseLua)
)

// ErrClosed is matched by the error of Acquire and AcquireFenced called
// after Close, or still waiting when Close ran.
var ErrClosed = errors.New("fair: lock closed")

// queueLease is how long a Lock's presence on a lock lasts unless it is
// renewed, which one of its waiters on that lock does every queueRenew,
// for all of them. Waiters of a Lock that crashed, hangs or lost Redis
// are skipped by hand-offs once it has run out; a live Lock would have to
// miss two renewals in a row to lose it.
const (
	queueLease = 300 * time.Millisecond
	queueRenew = queueLease / 3
)

// queueExpiry is how long a lock's queue lasts after it was last written
// or renewed (each renewal of a presence renews the queue too): longer
// than queueLease, so that it never runs out while a Lock that waits on
// the lock is present, and short enough that the entry of a waiter that
// gave up and could not leave is gone soon after nobody waits any more.
const queueExpiry = 2 * queueLease

// Client is what a fair lock needs from go-redis: what lock.Client has,
// plus Pipeline (to queue up behind others without a script), DEL (for
// Close) and connections to subscribe on. *redis.Client (single node or
// Sentinel failover), *redis.ClusterClient, *redis.Ring and
// redis.UniversalClient satisfy it.
type Client interface {
	lock.Client
	Pipeline() redis.Pipeliner
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Lock is a fair lock: it hands out the same leases as lock.Acquire, but
// its waiters take turns (see the package doc). One Lock serves every key
// and goroutine of a process: it keeps one subscription connection per
// Redis node (one on a single node), shared by all of its waiters, and a
// goroutine that reads it. A connection closes once nobody has waited on
// it for a few seconds; Close stops them all.
//
// Each Lock has a random name of its own, which its waiters' queue
// entries carry and its presence on each lock key is named by (see
// queue.lua). In the comments here, "a Lock" (capitalised) is one of
// these; "the lock" is the lease on a key.
type Lock struct {
	rdb     Client
	name    string               // names its waiters' entries and its presence in each queue
	cluster *redis.ClusterClient // set when rdb is one: sharded pub/sub

	mu      sync.Mutex
	closed  bool
	done    chan struct{}      // closed by Close
	waiters map[string]*waiter // by handoffID
	shards  map[string]*shard  // by node address, "" for a single node
	wg      sync.WaitGroup     // the shards' goroutines
}

// New returns a fair lock on rdb. It starts nothing until a waiter needs
// to wait; call Close when done with it. A nil rdb gives a Lock whose
// Acquire returns an error matching lock.ErrInvalid.
func New(rdb Client) *Lock {
	f := &Lock{
		rdb:     rdb,
		name:    rand.Text(),
		done:    make(chan struct{}),
		waiters: make(map[string]*waiter),
		shards:  make(map[string]*shard),
	}
	if c, ok := rdb.(*redis.ClusterClient); ok && c != nil {
		f.cluster = c
	}
	return f
}

// Acquire takes the lock on key for ttl, waiting its turn behind the
// waiters that came first, until it holds the lock or ctx ends. Without
// contention it costs one script call (and, for a key this Lock has not
// waited on in the last seconds, a SUBSCRIBE it does not wait for);
// otherwise it joins the queue, with a plain RPUSH when others of this
// Lock wait already, and waits for a release to hand it the lock.
// The lock's Attempts counts the tries it made, not the hand-off. A ttl
// with a fraction of a millisecond is rounded up, as lock.Acquire does.
//
// It returns what lock.Acquire returns: an error matching
// lock.ErrInvalid before talking to Redis (and for a nil Lock); an error
// matching lock.ErrWrongType when the key holds something other than a
// lock (at once, or, when it only queued up behind others, at its next
// try); an error wrapping ctx.Err() and naming the key when ctx ends
// first (it leaves the queue then, and passes the lock on if it was just
// handed over); and a Redis error at once when its first tries get no
// answer (see arrivalTries). Once queued, it outlasts a dropped
// connection or a Redis restart: each waiter whose try got no answer
// asks again every 100 ms, in a mode that puts it back at the end of the
// queue if Redis lost its entry, until one is answered or ctx ends.
// After Close it returns an error matching ErrClosed.
func (f *Lock) Acquire(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
	return f.acquire(ctx, key, ttl, false)
}

// AcquireFenced is Acquire plus a fencing token, as lock.AcquireFenced:
// taking the lock, on a try or by a hand-off, and incrementing the fence
// counter at lock.FenceKey(key) happen in one script, so l.Fence grows
// with every acquisition. It also returns the errors of
// lock.AcquireFenced for a broken counter, at once and without queueing.
func (f *Lock) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
	return f.acquire(ctx, key, ttl, true)
}

func (f *Lock) acquire(ctx context.Context, key string, ttl time.Duration, fenced bool) (*lock.Lock, error) {
	var rdb Client
	if f != nil {
		rdb = f.rdb
	}
	ttl, err := core.Lend.Check(rdb, key, ttl)
	if err != nil {
		return nil, err
	}
	q := newFairKeys(key, f.cluster != nil)
	token := rand.Text()
	wantFence := 0
	if fenced {
		wantFence = 1
	}
	entry := fmt.Sprintf("%s %d %d %s", token, ttl.Milliseconds(), wantFence, f.name)

	// Listen before the first try: a hand-off published after the try put
	// us in the queue must find us subscribed, or must be caught by a
	// second try once we are (see wakeOn).
	w, err := f.enter(ctx, q.channel(f.name), q.presence(f.name), token)
	if errors.Is(err, ErrClosed) {
		return nil, closed(key)
	}
	if err != nil {
		return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
	}
	defer f.exit(w)
	granted := func(fence int64, attempts int) *lock.Lock {
		return core.Lend.NewLock(f.rdb, key, token, ttl, attempts, fence, handoff{q, f.rdb}).(*lock.Lock)
	}
	// leave takes our entry out of the queue, and passes the lock on if a
	// release had just made us the holder. It runs after ctx ended too.
	leave := func() { q.release(ctx, f.rdb, token, entry) }

	timer := time.NewTimer(queueRenew)
	defer timer.Stop()
	mode, renew := join, f.renewal(w)
	arrived := false // a try was answered: we are in the queue, or were
	var lastErr error
	for attempts := 1; ; attempts++ {
		wake := f.wakeOn(w)
		doubt := f.doubts(w)
		var r tried
		if mode == join && !renew && f.crowded(w) {
			// Others of this Lock wait for this lock: most likely, all we
			// need to do is queue up behind them.
			r, err = q.join(ctx, f.rdb, token, entry, f.name)
		} else {
			r, err = q.try(ctx, f.rdb, token, entry, mode, renew, f.name)
		}
		switch {
		case err == nil && r.won:
			f.nudge(w, r)
			return granted(r.fence, attempts), nil
		case err == nil:
			arrived, lastErr = true, nil
			if mode == rejoin {
				f.settle(w, doubt)
			}
			f.nudge(w, r)
		case ctx.Err() != nil:
			leave()
			return nil, gaveUp(key, ctx.Err(), err)
		case refused(err):
			leave()
			f.refused(w)
			return nil, err // the key or the counter holds what it must not
		case !transient(err) || !arrived && (attempts == arrivalTries || !core.Lost(err)):
			leave()
			return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
		case !arrived:
			// No answer yet: the try may or may not have queued us. Ask
			// again at once, in a mode that queues us once either way.
			f.doubt(w)
			mode, lastErr = rejoin, err
			continue
		default:
			// We were queued, and lost Redis for a moment (a dropped
			// connection, a restart): what the try did is unknown, and
			// Redis may have lost the queue. Until each waiter of this
			// Lock on the lock has had an answer in mode rejoin, it asks
			// again every queueRenew (see due).
			f.doubt(w)
			lastErr = err
		}

		var fence int64
		var got bool
		mode, renew, fence, got, err = f.wait(ctx, w, wake, timer)
		switch {
		case got:
			return granted(fence, attempts), nil
		case errors.Is(err, ErrClosed):
			leave()
			return nil, closed(key)
		case err != nil:
			leave()
			return nil, gaveUp(key, err, lastErr)
		}
	}
}

// wait blocks a waiter until it was handed the lock (got, with its
// fence), or must ask Redis again: in mode, renewing its Lock's presence
// when renew is set. It returns ctx.Err() when ctx ends, ErrClosed
// when the Lock closes. Besides a hand-off, what wakes it is wake (see
// wakeOn), a nudge from another waiter of its Lock, and its timer: at
// the presence's renewal, which the first waiter of a Lock to see it
// takes on for all of them while the others go on waiting without asking
// Redis, or, while its entry may be missing from the queue, for every
// waiter (see due).
func (f *Lock) wait(ctx context.Context, w *waiter, wake <-chan struct{}, timer *time.Timer) (mode string, renew bool, fence int64, got bool, err error) {
	for {
		timer.Reset(f.renewalIn(w))
		select {
		case fence := <-w.grant:
			return "", false, fence, true, nil
		case <-wake:
			return rejoin, f.renewal(w), 0, false, nil
		case <-w.nudged:
			return rejoin, f.renewal(w), 0, false, nil
		case <-timer.C:
			if mode, renew := f.due(w); mode != "" {
				return mode, renew, 0, false, nil
			}
		case <-ctx.Done():
			return "", false, 0, false, ctx.Err()
		case <-f.done:
			return "", false, 0, false, ErrClosed
		}
	}
}

// gaveUp is the error of a wait that ctx ended. last is the Redis error of
// the last try, if it failed, which may be why the wait was long.
func gaveUp(key string, cause, last error) error {
	if last != nil && !errors.Is(last, cause) {
		return fmt.Errorf("lock: acquire %s: gave up waiting (last try: %v): %w", key, last, cause)
	}
	return fmt.Errorf("lock: acquire %s: gave up waiting: %w", key, cause)
}

func closed(key string) error {
	return fmt.Errorf("lock: acquire %s: %w", key, ErrClosed)
}

// refused reports whether err is Redis refusing a try because the key, or
// the fence counter, holds what it must not: asking again would only get
// the same answer.
func refused(err error) bool {
	return errors.Is(err, lock.ErrWrongType) || errors.Is(err, lock.ErrFenceOverflow)
}

// transient reports whether a try that failed with err is worth repeating:
// a network error (no answer from Redis), or Redis saying it cannot serve
// yet. Any other answer from Redis would only come again.
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

// fairKeys are the keys of one fair lock, in the order the scripts take
// them (see queue.lua), and how a release tells the next holder.
type fairKeys struct {
	keys    []string // lock, queue, fence counter, what the channels start with
	publish string   // "PUBLISH", or "SPUBLISH" on Redis Cluster
}

// newFairKeys names the keys of the fair lock on key. Each starts as the
// name of the lock's fence counter does, lock.FenceKey(key) without its
// ":fence", and so shares the lock key's hash slot: "app:lock:{wallet:42}"
// has its queue at "app:lock:{wallet:42}:queue", and "lock:7" at
// "{lock:7}:queue". So do the channels, so that sharded pub/sub sends a
// hand-off to the node that holds the lock. The key is one that
// lock.Acquire accepts (Check refused the others).
func newFairKeys(key string, sharded bool) *fairKeys {
	tagged := strings.TrimSuffix(lock.FenceKey(key), ":fence")
	q := &fairKeys{
		keys:    []string{key, tagged + ":queue", lock.FenceKey(key), tagged + ":handoff"},
		publish: "PUBLISH",
	}
	if sharded {
		q.publish = "SPUBLISH"
	}
	return q
}

// channel is where the Lock named fair hears of hand-offs to its
// waiters: a channel per Lock, so that PUBLISH's count of receivers says
// whether that Lock listens (see queue.lua).
func (q *fairKeys) channel(fair string) string { return q.keys[3] + ":" + fair }

// presence is the presence key of the Lock named fair on this lock (see
// queue.lua).
func (q *fairKeys) presence(fair string) string { return q.keys[1] + ":" + fair }

// The modes of a try (see acquire.lua).
const (
	join   = "join"   // arrival: queue up, or take the lock if nobody waits
	first  = "first"  // arrival, after an RPUSH found the queue empty
	check  = "check"  // ask again: did a release make us the holder?
	rejoin = "rejoin" // ask again, and queue up again if our entry is gone
)

// arrivalTries is how many tries an arrival makes, one after the other,
// while none is answered, before Acquire gives up with the error: a
// dropped connection costs a try, not the Acquire. A Redis that cannot be
// reached is reported at once. Tries after the first are in mode
// rejoin, which queues the waiter once whether or not an unanswered try
// did.
const arrivalTries = 3

// tried is what one try found out.
type tried struct {
	won    bool
	fence  int64  // when won
	holder string // otherwise: the handoffID of the holder's token, "" if unknown
	lapsed bool   // our Lock's presence had run out: its entries may be gone
}

// try runs acquire.lua once, in mode, renewing the presence of the
// Lock named fair when renew is set.
func (q *fairKeys) try(ctx context.Context, rdb Client, token, entry, mode string, renew bool, fair string) (tried, error) {
	lease := int64(0)
	if renew {
		lease = queueLease.Milliseconds()
	}
	keys := append(q.keys[:len(q.keys):len(q.keys)], q.presence(fair))
	reply, err := core.Run(ctx, rdb, fairAcquireScript, fairQueueLua+fairAcquireLua, keys, q.publish, token, entry, mode, lease, queueExpiry.Milliseconds()).Slice()
	if err != nil {
		return tried{}, err
	}
	if len(reply) >= 2 {
		switch first := reply[0].(type) {
		case int64:
			if first == 1 {
				if n, ok := reply[1].(int64); ok {
					lapsed := len(reply) == 3 && reply[2] == int64(1)
					return tried{won: true, fence: n, lapsed: lapsed}, nil
				}
			}
			if len(reply) == 3 && first == 0 {
				holder, ok1 := reply[1].(string)
				lapsed, ok2 := reply[2].(int64)
				if ok1 && ok2 {
					return tried{holder: holder, lapsed: lapsed == 1}, nil
				}
			}
		case string:
			return tried{}, core.Lend.FenceRefusal(q.keys[0], reply)
		}
	}
	return tried{}, fmt.Errorf("unexpected reply %v from acquire.lua", reply)
}

// join queues a waiter with a plain RPUSH, the cheapest way to arrive
// behind others: one round trip, no script, and a PEXPIRE in the same
// round trip, as every write to the queue has. Only when that RPUSH found
// the queue empty does it run acquire.lua ("first"), to take the
// lock if it is free. The two are not one atomic step, and need not be:
// while an entry is queued, a release hands the lock to it rather than
// freeing it, and whatever the try then finds is still true.
func (q *fairKeys) join(ctx context.Context, rdb Client, token, entry, fair string) (tried, error) {
	p := rdb.Pipeline()
	push := core.Send(ctx, p, "rpush", q.keys[1], entry) // a second RPUSH would queue us twice
	p.PExpire(ctx, q.keys[1], queueExpiry)
	p.Exec(ctx)
	n, err := push.Int64()
	if err != nil || n > 1 {
		return tried{}, err
	}
	return q.try(ctx, rdb, token, entry, first, false, fair)
}

// handoff is how a lock that a Lock handed out is released (see
// core.Handoff): by release.lua, which passes it to the next waiter.
type handoff struct {
	q   *fairKeys
	rdb Client
}

func (h handoff) Release(ctx context.Context, token string) error {
	return h.q.release(ctx, h.rdb, token, "")
}

func (h handoff) Queue(ctx context.Context, p redis.Pipeliner, token string) *redis.Cmd {
	return core.EvalSha(ctx, p, fairReleaseScript, h.q.keys, h.q.publish, token, "")
}

// release runs release.lua: with an entry, to leave the queue;
// without, as (*lock.Lock).Release does for a lock that a Lock handed
// out. Like Release, it keeps ctx's values but not its cancellation, and
// gives up after lock.ReleaseTimeout. It returns lock.ErrNotHeld when
// token did not hold the lock, and an error matching lock.ErrUnknown when
// no answer came (see outcome).
//
// A release whose reply was lost is sent again, by release itself, not
// by go-redis: running the script twice does no harm (once a token has
// given the lock away it never holds it again, and the entry is gone
// already), but the second run answers 0 when the first released the
// lock, and only release knows that a first run may have happened.
func (q *fairKeys) release(ctx context.Context, rdb Client, token, entry string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), lock.ReleaseTimeout)
	defer cancel()
	var unanswered error // why an earlier run may have run unanswered
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		n, err := core.Run(ctx, rdb, fairReleaseScript, fairQueueLua+fairReleaseLua, q.keys, q.publish, token, entry).Int()
		if err == nil || !transient(err) {
			return q.outcome(n, err, unanswered)
		}
		if core.Lost(err) {
			unanswered = err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return q.outcome(0, err, unanswered)
		case <-t.C:
		}
	}
}

// outcome is what a release whose last run answered n, or failed with
// err, returns. unanswered is the error of an earlier run that got no
// answer: then an answer 0 may mean that run released the lock, and is no
// proof that the lease had run out. A run that got no answer, or an
// answer 0 after one, gives an error matching lock.ErrUnknown (and wrapping the
// cause), never lock.ErrNotHeld.
func (q *fairKeys) outcome(n int, err, unanswered error) error {
	switch {
	case core.Lost(err):
		return fmt.Errorf("lock: release %s: %w: %w", q.keys[0], lock.ErrUnknown, err)
	case err != nil && unanswered != nil:
		return fmt.Errorf("lock: release %s: %w: %w (then: %w)", q.keys[0], lock.ErrUnknown, unanswered, err)
	case err != nil:
		return fmt.Errorf("lock: release %s: %w", q.keys[0], err)
	case n == 0 && unanswered != nil:
		return fmt.Errorf("lock: release %s: %w: the lock was gone when asked again after %w", q.keys[0], lock.ErrUnknown, unanswered)
	case n == 0:
		return lock.ErrNotHeld
	}
	return nil
}

// handoffID is how a hand-off message names the waiter it made the
// holder: the SHA-1 of its token, as queue.lua computes it, so that
// the token itself, which could release the lock, never goes out.
func handoffID(token string) string {
	sum := sha1.Sum([]byte(token))
	return hex.EncodeToString(sum[:])
}

// parseHandoff reads a hand-off message, "id fence".
func parseHandoff(payload string) (id string, fence int64, ok bool) {
	id, rest, ok := strings.Cut(payload, " ")
	if !ok {
		return "", 0, false
	}
	fence, err := strconv.ParseInt(rest, 10, 64)
	return id, fence, err == nil
}
