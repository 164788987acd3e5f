package lock

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
)

// This file is the fair lock: waiters queue in Redis and a release hands
// the lock to the first of them. fair_notify.go is how a waiter hears
// that it was handed the lock.

var (
	//go:embed fair_queue.lua
	fairQueueLua string

	//go:embed fair_acquire.lua
	fairAcquireLua    string
	fairAcquireScript = redis.NewScript(fairQueueLua + fairAcquireLua)

	//go:embed fair_release.lua
	fairReleaseLua    string
	fairReleaseScript = redis.NewScript(fairQueueLua + fairReleaseLua)
)

// ErrFairClosed is matched by the error of Fair.Acquire and
// Fair.AcquireFenced called after Close, or still waiting when Close ran.
var ErrFairClosed = errors.New("lock: fair lock closed")

// queueLease is how long a waiter's place in the queue lasts unless the
// waiter renews it, which a live waiter does every queueRenew. A waiter
// that crashes leaves the queue after queueLease at most; a live one would
// have to miss two renewals in a row to lose its place.
const (
	queueLease = 300 * time.Millisecond
	queueRenew = queueLease / 3
)

// FairClient is what a Fair lock needs from go-redis: what Client has, plus
// connections to subscribe on. *redis.Client (single node or Sentinel
// failover), *redis.ClusterClient, *redis.Ring and redis.UniversalClient
// satisfy it.
type FairClient interface {
	Client
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Fair hands out the same leases as Acquire, but waiters take turns: they
// queue in Redis in the order they arrived, and a release hands the lock
// straight to the first of them, who hears so through Redis pub/sub
// instead of asking again. Acquire polls: whoever asks at the right moment
// wins, and under contention that is most often the holder that just
// released, while the others sleep.
//
// Use Fair when a key is contended and the wait matters: a hot wallet,
// a job that many workers want. Every waiter is served in turn, the lock
// changes hands without a pause, and a waiter asks Redis every 100 ms
// instead of every 5 to 15 ms. Use Acquire when contention is rare: it
// needs no subscription, and without contention both take the lock in one
// round trip.
//
// One Fair serves every key and goroutine of a process: it keeps one
// subscription connection per Redis node (one on a single node), shared
// by all of its waiters, and a goroutine that reads it. A connection
// closes once nobody has waited on it for a few seconds; Close stops
// them all.
//
// The locks it returns are ordinary *Lock values: Refresh, Watch and the
// TTL rounding work as for Acquire, and Release passes the lock to the
// next waiter. Do not mix Acquire and Fair on one key: a polling Acquire
// can take a lock that waiters queue for when it is free, and a lock that
// Acquire took is released without a hand-off (the waiters notice within
// a third of a queue lease).
//
// What a lost message costs: a waiter asks Redis again every third of its
// queue lease (100 ms), and sooner when the holder's TTL runs out before
// that. A release whose message never arrives (the subscription dropped,
// Redis restarted) has still made the waiter the holder, which its next
// try finds out; a holder that crashed is succeeded within its TTL plus
// one such wait. A waiter that crashes leaves the queue when its lease
// runs out (300 ms); a release that reaches it before then hands it the
// lock, which then stays blocked for that waiter's TTL, as it would for a
// crashed holder.
type Fair struct {
	rdb     FairClient
	cluster *redis.ClusterClient // set when rdb is one: sharded pub/sub

	mu      sync.Mutex
	closed  bool
	done    chan struct{}      // closed by Close
	waiters map[string]*waiter // by handoffID
	shards  map[string]*shard  // by node address, "" for a single node
	wg      sync.WaitGroup     // the shards' goroutines
}

// NewFair returns a fair lock on rdb. It starts nothing until a waiter
// needs to wait; call Close when done with it. A nil rdb gives a Fair
// whose Acquire returns ErrNilClient.
func NewFair(rdb FairClient) *Fair {
	f := &Fair{
		rdb:     rdb,
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
// contention it costs one script call (and, for a lock this Fair has not
// waited on in the last seconds, a SUBSCRIBE it does not wait for);
// otherwise it waits for a release to hand it the lock (see Fair).
// Lock.Attempts counts the tries it made, not the hand-off. A ttl with a
// fraction of a millisecond is rounded up, as Acquire does.
//
// It returns what the package's Acquire returns: ErrNilClient,
// ErrBadTTL and ErrEmptyKey before talking to Redis; an error matching
// ErrWrongType at once when the key holds something other than a lock; an
// error wrapping ctx.Err() and naming the key when ctx ends first (it
// leaves the queue then, and passes the lock on if it was just handed
// over); and a Redis error of its first try at once. Once queued, it
// outlasts a dropped connection or a Redis restart: it tries again every
// third of a queue lease until ctx ends. After Close it returns an error
// matching ErrFairClosed.
func (f *Fair) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return f.acquire(ctx, key, ttl, false)
}

// AcquireFenced is Acquire plus a fencing token, as the package's
// AcquireFenced: taking the lock, on a try or by a hand-off, and
// incrementing the fence counter at FenceKey(key) happen in one script,
// so l.Fence grows with every acquisition. It also returns the errors of
// AcquireFenced for a broken counter, at once and without queueing.
func (f *Fair) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	return f.acquire(ctx, key, ttl, true)
}

func (f *Fair) acquire(ctx context.Context, key string, ttl time.Duration, fenced bool) (*Lock, error) {
	if f == nil {
		return nil, ErrNilClient
	}
	if err := validate(f.rdb, key, ttl); err != nil {
		return nil, err
	}
	ttl = wholeMillis(ttl)
	q := newFairKeys(key, f.cluster != nil)
	token := rand.Text()
	wantFence := 0
	if fenced {
		wantFence = 1
	}
	entry := fmt.Sprintf("%s %d %d", token, ttl.Milliseconds(), wantFence)

	// Listen before the first try: a hand-off published after the try put
	// us in the queue must find us subscribed, or must be caught by a
	// second try once we are (see wakeOn).
	w, err := f.enter(ctx, q.channel(), token)
	if errors.Is(err, ErrFairClosed) {
		return nil, closed(key)
	}
	if err != nil {
		return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
	}
	defer f.exit(w)
	granted := func(fence int64, attempts int) *Lock {
		l := newLock(f.rdb, key, token, ttl, attempts)
		l.Fence, l.handoff = fence, q
		return l
	}
	// leave takes our entry out of the queue, and passes the lock on if a
	// release had just made us the holder. It runs after ctx ended too.
	leave := func() { q.release(ctx, f.rdb, token, entry) }

	var timer *time.Timer
	var lastErr error
	for attempts := 1; ; attempts++ {
		wake := f.wakeOn(w)
		won, n, err := q.try(ctx, f.rdb, token, entry)
		var refused errorIs
		switch {
		case err == nil && won:
			return granted(n, attempts), nil
		case err == nil:
			lastErr = nil
		case ctx.Err() != nil:
			leave()
			return nil, gaveUp(key, ctx.Err(), err)
		case errors.As(err, &refused):
			leave()
			return nil, err // the key or the counter holds what it must not
		case attempts == 1 || !transient(err):
			leave()
			return nil, fmt.Errorf("lock: acquire %s: %w", key, err)
		default:
			// We were queued, and lost Redis for a moment (a dropped
			// connection, a restart): wait as after any try.
			lastErr, n = err, -1
		}

		// n is the holder's remaining TTL: it may die, and then nobody
		// releases. Ask again when it runs out, and at the latest when
		// our place in the queue needs renewing.
		wait := queueRenew
		if n > 0 && time.Duration(n)*time.Millisecond < wait {
			wait = time.Duration(n) * time.Millisecond
		}
		if timer == nil {
			timer = time.NewTimer(wait)
			defer timer.Stop()
		} else {
			timer.Reset(wait)
		}
		select {
		case fence := <-w.grant:
			return granted(fence, attempts), nil
		case <-wake: // see wakeOn: ask again at once
		case <-timer.C:
		case <-ctx.Done():
			leave()
			return nil, gaveUp(key, ctx.Err(), lastErr)
		case <-f.done:
			leave()
			return nil, closed(key)
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
	return errorIs{fmt.Sprintf("lock: acquire %s: the fair lock was closed", key), ErrFairClosed}
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
// them (see fair_queue.lua), and how a release tells the next holder.
type fairKeys struct {
	keys    []string // lock, queue, leases, fence counter, channel
	publish string   // "PUBLISH", or "SPUBLISH" on Redis Cluster
}

// newFairKeys names the keys of the fair lock on key. Each shares the
// lock key's hash slot, as FenceKey's counter does: "app:lock:{wallet:42}"
// has its queue at "app:lock:{wallet:42}:queue", and "lock:7" at
// "{lock:7}:queue". So does the channel, so that sharded pub/sub sends a
// hand-off to the node that holds the lock.
func newFairKeys(key string, sharded bool) *fairKeys {
	tagged := "{" + key + "}"
	if hasHashTag(key) {
		tagged = key
	}
	q := &fairKeys{
		keys:    []string{key, tagged + ":queue", tagged + ":queue:leases", FenceKey(key), tagged + ":handoff"},
		publish: "PUBLISH",
	}
	if sharded {
		q.publish = "SPUBLISH"
	}
	return q
}

func (q *fairKeys) channel() string { return q.keys[4] }

// try runs fair_acquire.lua once. It reports whether the waiter holds the
// lock and, with it, the fence; or else the holder's remaining TTL in ms.
func (q *fairKeys) try(ctx context.Context, rdb Client, token, entry string) (won bool, n int64, err error) {
	reply, err := fairAcquireScript.Run(ctx, rdb, q.keys, q.publish, token, entry, queueLease.Milliseconds()).Slice()
	if err != nil {
		return false, 0, err
	}
	if len(reply) == 2 {
		switch first := reply[0].(type) {
		case int64:
			n, ok := reply[1].(int64)
			if ok && (first == 0 || first == 1) {
				return first == 1, n, nil
			}
		case string:
			return false, 0, fenceRefusal(q.keys[0], reply)
		}
	}
	return false, 0, fmt.Errorf("unexpected reply %v from fair_acquire.lua", reply)
}

// release runs fair_release.lua: with an entry, to leave the queue;
// without, as Lock.Release does for a lock from a Fair. Like Release, it
// keeps ctx's values but not its cancellation, and gives up after
// ReleaseTimeout. It returns ErrNotHeld when token did not hold the lock.
func (q *fairKeys) release(ctx context.Context, rdb Client, token, entry string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseTimeout)
	defer cancel()
	n, err := fairReleaseScript.Run(ctx, rdb, q.keys, q.publish, token, entry).Int()
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", q.keys[0], err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// handoffID is how a hand-off message names the waiter it made the
// holder: the SHA-1 of its token, as fair_queue.lua computes it, so that
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
