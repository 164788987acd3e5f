package fair

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
)

// This file is how a Lock's waiters hear of a hand-off: one subscription
// connection per Redis node, shared by every waiter of the Lock, and one
// goroutine per connection that reads it and wakes the waiter a message
// names.
//
// A message published while nobody listens is lost, so each waiter
// subscribes to its lock's channel before its first try, and trusts the
// subscription only once Redis has confirmed it. Until then it wakes at
// the confirmation and tries again: a hand-off published in between has
// already made it the holder, which that try finds. When the connection
// drops, every waiter on it wakes and tries again, then waits for the
// next connection's confirmation in the same way.

const (
	// listenTick is how often the listening goroutine looks after its
	// channels (see tend).
	listenTick = 500 * time.Millisecond
	// linger is how long a channel stays subscribed with nobody waiting
	// on it, so that a busy lock does not subscribe again for every wait.
	linger = 2 * time.Second
)

// waiter is one Acquire call that is waiting.
type waiter struct {
	id     string        // how a hand-off message names it (see handoffID)
	grant  chan int64    // the fence of the hand-off that named this waiter
	nudged chan struct{} // another waiter of the Lock says: ask again
	sub    *subscription
	// settled is sub.doubt as of this waiter's arrival or its last
	// answered try in mode rejoin; guarded by Lock.mu. While sub.doubt
	// has grown past it, its entry may be missing from the queue.
	settled int
}

// subscription is one lock's hand-off channel on a shard's connection,
// and what the Lock's waiters on that lock share. Its fields are guarded
// by Lock.mu.
type subscription struct {
	waiters  int
	idle     time.Time // when waiters last dropped to 0
	gen      *generation
	renewed  time.Time // when a waiter last set out to renew the Lock's presence on the lock
	presence string    // the presence key, which Close deletes
	holder   string    // the handoffID of the holder the last try saw
	// doubt counts what may have taken entries of the Lock's waiters on
	// the lock out of the queue without a hand-off: a try that got no
	// answer (Redis may have lost the queue, or the reply said the
	// presence had lapsed), or a presence found lapsed.
	doubt int
}

// generation is one subscription on one connection: confirmed is closed
// when Redis confirms it, lost when that connection drops afterwards. A
// new connection brings a new generation.
type generation struct {
	confirmed chan struct{}
	lost      chan struct{}
	live      bool      // confirmed is closed
	since     time.Time // when it was asked for
}

func newGeneration() *generation {
	return &generation{confirmed: make(chan struct{}), lost: make(chan struct{}), since: time.Now()}
}

// shard is one subscription connection, and the channels on it. It lives
// while it has channels: tend closes it when the last one goes.
type shard struct {
	node string // its key in Lock.shards
	ps   *redis.PubSub
	// order is held while a subscribe or an unsubscribe is decided and
	// written, so that Redis answers them in the order they were decided.
	order     sync.Mutex
	listening bool // its goroutine runs; guarded by order

	chans  map[string]*subscription // guarded by Lock.mu
	closed bool                     // guarded by Lock.mu and order
}

// enter registers a waiter for token on channel and subscribes to the
// channel if nobody of this Lock listens to it yet. presence is the
// Lock's presence key on the channel's lock.
func (f *Lock) enter(ctx context.Context, channel, presence, token string) (*waiter, error) {
	node, open, err := f.nodeOf(ctx, channel)
	if err != nil {
		return nil, err
	}
	w := &waiter{id: handoffID(token), grant: make(chan int64, 1), nudged: make(chan struct{}, 1)}
	for {
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			return nil, ErrClosed
		}
		sh := f.shards[node]
		if sh == nil {
			sh = &shard{node: node, ps: open(), chans: make(map[string]*subscription)}
			f.shards[node] = sh
			f.wg.Add(1) // for listen, which subscribeFirst starts
		}
		if s := sh.chans[channel]; s != nil {
			f.join(w, s)
			f.mu.Unlock()
			return w, nil
		}
		f.mu.Unlock()
		if f.subscribeFirst(ctx, sh, channel, presence, w) {
			return w, nil
		}
		// tend closed the shard meanwhile: start again with a new one.
	}
}

// join adds w to the waiters of s. Call it with f.mu held.
func (f *Lock) join(w *waiter, s *subscription) {
	s.waiters++
	w.sub = s
	w.settled = s.doubt
	f.waiters[w.id] = w
}

// subscribeFirst subscribes to a channel nobody of this Lock listens to,
// for w. It decides and writes under sh.order, so that the unsubscribe of
// an idle channel cannot slip in between. It reports false, having done
// nothing, when the shard was closed meanwhile.
func (f *Lock) subscribeFirst(ctx context.Context, sh *shard, channel, presence string, w *waiter) bool {
	sh.order.Lock()
	defer sh.order.Unlock()
	f.mu.Lock()
	if sh.closed {
		f.mu.Unlock()
		return false
	}
	s := sh.chans[channel]
	fresh := s == nil
	if fresh {
		s = &subscription{gen: newGeneration(), presence: presence}
		sh.chans[channel] = s
	}
	f.join(w, s)
	f.mu.Unlock()
	if fresh {
		f.subscribe(ctx, sh, channel)
	}
	if !sh.listening {
		// Only now: on Redis Cluster the connection goes to the node of
		// the first channel it has, so it must have one when it connects.
		sh.listening = true
		go f.listen(sh)
	}
	return true
}

// nodeOf names the Redis node that publishes channel's hand-offs ("" on
// a single node), and returns how to open a subscription connection to it
// (not yet connected).
func (f *Lock) nodeOf(ctx context.Context, channel string) (string, func() *redis.PubSub, error) {
	switch c := f.rdb.(type) {
	case *redis.ClusterClient:
		// Sharded pub/sub delivers a channel's messages on the node that
		// owns its slot; the connection goes to the node of the first
		// channel it subscribes to (see subscribeFirst).
		node, err := c.MasterForKey(ctx, channel)
		if err != nil {
			return "", nil, err
		}
		return node.Options().Addr, func() *redis.PubSub { return c.SSubscribe(context.Background()) }, nil
	case *redis.Ring:
		// A Ring sends a script to the shard of its first key, which
		// shares the channel's hash tag.
		shard, err := c.GetShardClientForKey(channel)
		if err != nil {
			return "", nil, err
		}
		return shard.Options().Addr, func() *redis.PubSub { return shard.Subscribe(context.Background()) }, nil
	}
	return "", func() *redis.PubSub { return f.rdb.Subscribe(context.Background()) }, nil
}

// subscribe sends SUBSCRIBE (SSUBSCRIBE on a cluster). Its error is left
// alone: a channel that stays unconfirmed is subscribed again by tend.
func (f *Lock) subscribe(ctx context.Context, sh *shard, channels ...string) {
	if f.cluster != nil {
		sh.ps.SSubscribe(ctx, channels...)
		return
	}
	sh.ps.Subscribe(ctx, channels...)
}

func (f *Lock) unsubscribe(ctx context.Context, sh *shard, channels ...string) {
	if f.cluster != nil {
		sh.ps.SUnsubscribe(ctx, channels...)
		return
	}
	sh.ps.Unsubscribe(ctx, channels...)
}

// exit unregisters a waiter that has stopped waiting.
func (f *Lock) exit(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.waiters, w.id)
	if w.sub.waiters--; w.sub.waiters == 0 {
		w.sub.idle = time.Now()
	}
}

// wakeOn returns what, besides a hand-off naming it, must wake a waiter
// after its next try: while Redis has not confirmed the subscription, the
// confirmation (a hand-off published before it was missed, so the waiter
// must try again to find out); once it has, the loss of the connection (a
// hand-off published after that is lost). Call it before the try.
func (f *Lock) wakeOn(w *waiter) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	g := w.sub.gen
	if g.live {
		return g.lost
	}
	return g.confirmed
}

// renewal reports whether the Lock's presence on w's lock is due for
// renewal, and if so leaves it to w: the caller's next try renews it.
func (f *Lock) renewal(w *waiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if now.Sub(w.sub.renewed) < queueRenew {
		return false
	}
	w.sub.renewed = now
	return true
}

// due reports, when w's timer fires, in which mode w must ask Redis
// again: rejoin while doubt remains that its entry is in the queue (see
// subscription.doubt), check when the Lock's presence is due for renewal
// and w takes that on (renew), "" when neither.
func (f *Lock) due(w *waiter) (mode string, renew bool) {
	renew = f.renewal(w)
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case w.settled != w.sub.doubt:
		return rejoin, renew
	case renew:
		return check, true
	}
	return "", false
}

// doubts returns the doubt count of w's lock, to settle w with once a try
// in mode rejoin made before it is answered.
func (f *Lock) doubts(w *waiter) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return w.sub.doubt
}

// doubt says that entries of w's Lock on its lock may be gone from the
// queue: each of its waiters asks again in mode rejoin at its next timer,
// and goes on doing so until one such try is answered.
func (f *Lock) doubt(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.sub.doubt++
}

// settle records that w's try in mode rejoin, made when the doubt count
// was d, was answered: w's entry is in the queue, or w holds the lock.
func (f *Lock) settle(w *waiter, d int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.settled = d
}

// crowded reports whether at least two other waiters of the Lock wait on
// w's lock: then at least one of them is still queued, even if a release
// has just handed the lock to the other and the message is on its way.
func (f *Lock) crowded(w *waiter) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return w.sub.waiters > 2
}

// renewalIn returns how long until the Lock's presence on w's lock is due
// for renewal, at least a millisecond.
func (f *Lock) renewalIn(w *waiter) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return max(time.Until(w.sub.renewed.Add(queueRenew)), time.Millisecond)
}

// nudge passes on what w's try found out to the other waiters of its
// Lock. A try sees who holds the lock: if that is one of ours that still
// waits, and it held the lock at the previous try too, its hand-off
// message was lost (a message on its way takes far less than the 100 ms
// between two renewals), and it must ask again to learn so. When the
// Lock's presence had lapsed, hand-offs may have skipped its entries:
// every waiter on the lock asks again, and joins the queue again if its
// entry is gone, at once and, should that try fail, until one is
// answered (see doubt). A try that won the lock passes that on too.
func (f *Lock) nudge(w *waiter, r tried) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if o := f.waiters[r.holder]; o != nil && o != w && r.holder == w.sub.holder {
		poke(o)
	}
	if r.holder != "" {
		w.sub.holder = r.holder
	}
	if r.lapsed {
		w.sub.doubt++
		f.pokeOthers(w)
	}
}

// refused tells the other waiters of w's Lock on its lock that a try was
// refused (the key or the fence counter holds what it must not): each
// tries at once, to learn so, instead of at its turn to renew.
func (f *Lock) refused(w *waiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pokeOthers(w)
}

// pokeOthers nudges every other waiter of w's Lock on its lock. Call it
// with f.mu held.
func (f *Lock) pokeOthers(w *waiter) {
	for _, o := range f.waiters {
		if o.sub == w.sub && o != w {
			poke(o)
		}
	}
}

func poke(w *waiter) {
	select {
	case w.nudged <- struct{}{}:
	default: // nudged already
	}
}

// listen reads a shard's connection until Close, or until tend closes the
// shard: it hands messages to their waiters and notes confirmations and
// lost connections. After an error, go-redis connects and subscribes
// again by itself at the next read.
func (f *Lock) listen(sh *shard) {
	defer f.wg.Done()
	ctx := context.Background()
	// unsubscribing counts, per channel, the UNSUBSCRIBEs Redis has yet to
	// answer: a confirmation read before their answer is an old one.
	unsubscribing := make(map[string]int)
	var pause time.Duration
	last := time.Now()
	for {
		msg, err := sh.ps.ReceiveTimeout(ctx, listenTick)
		select {
		case <-f.done:
			return
		default:
		}
		var netErr net.Error
		switch {
		case err == nil:
			pause = 0
		case errors.As(err, &netErr) && netErr.Timeout():
			pause = 0 // nothing arrived
		default:
			// The connection dropped, or Redis is unreachable: what was
			// in flight is lost, and so may be messages. Pause before the
			// next read, which connects again.
			f.lose(sh)
			clear(unsubscribing)
			pause = min(max(2*pause, 10*time.Millisecond), time.Second)
			t := time.NewTimer(pause)
			select {
			case <-f.done:
				t.Stop()
				return
			case <-t.C:
			}
		}
		switch m := msg.(type) {
		case *redis.Message:
			f.deliver(m.Payload)
		case *redis.Subscription:
			ch := m.Channel
			switch m.Kind {
			case "subscribe", "ssubscribe":
				if unsubscribing[ch] == 0 {
					f.confirm(sh, ch)
				}
			case "unsubscribe", "sunsubscribe":
				if unsubscribing[ch] > 0 {
					if unsubscribing[ch]--; unsubscribing[ch] == 0 {
						delete(unsubscribing, ch)
					}
				} else {
					f.drop(sh, ch) // Redis dropped it (its slot moved)
				}
			}
		}
		if time.Since(last) >= listenTick {
			last = time.Now()
			if f.tend(sh, unsubscribing) {
				return
			}
		}
	}
}

// deliver wakes the waiter a hand-off message names, if it is one of ours.
func (f *Lock) deliver(payload string) {
	id, fence, ok := parseHandoff(payload)
	if !ok {
		return
	}
	f.mu.Lock()
	w := f.waiters[id]
	f.mu.Unlock()
	switch {
	case w == nil:
	case fence < 0:
		// Skipped: it wants a fence and the counter is broken. Its next
		// try says why.
		poke(w)
	default:
		select {
		case w.grant <- fence:
		default: // one hand-off per token: never reached
		}
	}
}

func (f *Lock) confirm(sh *shard, channel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := sh.chans[channel]; s != nil && !s.gen.live {
		s.gen.live = true
		close(s.gen.confirmed)
	}
}

// drop starts a new generation for a channel Redis unsubscribed us from;
// tend subscribes it again.
func (f *Lock) drop(sh *shard, channel string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := sh.chans[channel]; s != nil {
		if s.gen.live {
			close(s.gen.lost)
		}
		s.gen = newGeneration()
	}
}

// lose starts a new generation for every confirmed channel of a shard
// whose connection dropped. The ones not yet confirmed keep theirs: the
// next connection confirms them.
func (f *Lock) lose(sh *shard) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range sh.chans {
		if s.gen.live {
			close(s.gen.lost)
			s.gen = newGeneration()
		}
	}
}

// tend unsubscribes the channels that nobody has waited on for linger,
// and subscribes again those that Redis has not confirmed for listenTick
// (a SUBSCRIBE lost with its connection, or dropped by Redis). When no
// channel is left it closes the shard and reports true.
func (f *Lock) tend(sh *shard, unsubscribing map[string]int) (closed bool) {
	sh.order.Lock()
	defer sh.order.Unlock()
	var idle, again []string
	f.mu.Lock()
	now := time.Now()
	for ch, s := range sh.chans {
		switch {
		case s.waiters == 0 && now.Sub(s.idle) >= linger:
			delete(sh.chans, ch)
			unsubscribing[ch]++
			idle = append(idle, ch)
		case !s.gen.live && now.Sub(s.gen.since) >= listenTick:
			s.gen.since = now
			again = append(again, ch)
		}
	}
	if len(sh.chans) == 0 {
		sh.closed = true
		delete(f.shards, sh.node)
	}
	f.mu.Unlock()
	if sh.closed {
		sh.ps.Close()
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), listenTick)
	defer cancel()
	if len(idle) > 0 {
		f.unsubscribe(ctx, sh, idle...)
	}
	if len(again) > 0 {
		f.subscribe(ctx, sh, again...)
	}
	return false
}

// Close stops the Lock: it closes its subscription connections, waits
// for their goroutines to end, and deletes its presence keys (see
// queue.lua), which would otherwise run out a moment later. Acquire
// calls still waiting leave their queue and return an error matching
// ErrClosed, and later ones return it at once. The locks it handed out
// stay held, and Release and Refresh work on them as before. Close always
// returns nil; calling it again does nothing.
func (f *Lock) Close() error {
	if f == nil {
		return nil
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil
	}
	f.closed = true
	close(f.done)
	var shards []*shard
	var presence []string
	for _, sh := range f.shards {
		shards = append(shards, sh)
		for _, s := range sh.chans {
			presence = append(presence, s.presence)
		}
	}
	f.mu.Unlock()
	for _, sh := range shards {
		sh.ps.Close()
	}
	f.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), lock.ReleaseTimeout)
	defer cancel()
	for _, key := range presence {
		f.rdb.Del(ctx, key) // one at a time: on Redis Cluster each has its own slot
	}
	return nil
}
