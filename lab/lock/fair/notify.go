package fair

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/lock/internal/once"
)

// How a Lock's waiters hear of a hand-off: a release appends "id fence
// fair" to the key's stream (see queue.lua), which keeps it while nobody
// reads. One reader per key and Lock reads it with a blocking XREAD from
// where it left off, wakes the waiter an entry names, and ticks.

type grant struct {
	fence int64     // -1: skipped for a broken counter
	since time.Time // the lease began after this
}

// waiter is one Acquire call that waits.
type waiter struct {
	id     string        // lock.TokenID of its token
	entry  string        // its queue entry (see queue.lua)
	queued bool          // a try queued it: the tick checks that the queue still holds it; guarded by Lock.mu
	grant  chan grant    // the hand-off that named it
	poke   chan struct{} // ask Redis again
}

// group is a Lock's waiters on one key and its reader there; guarded by
// Lock.mu.
type group struct {
	q       *fairKeys
	waiters map[*waiter]bool
	from    string             // the ID its reader started after; "" until it runs
	started time.Time          // when it started
	stop    context.CancelFunc // ends the reader's XREAD at once
	idle    time.Time          // when its last waiter left
}

// linger is how long a reader goes on with nobody waiting on its key, so
// that a busy key does not start one for every wait.
const linger = time.Second

// enter registers a waiter for token, queued as entry, on q's key; nil
// after Close.
func (f *Lock) enter(q *fairKeys, token, entry string) (*waiter, *group) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, nil
	}
	g := f.keys[q.keys[0]]
	if g == nil {
		g = &group{q: q, waiters: map[*waiter]bool{}}
		f.keys[q.keys[0]] = g
	}
	w := &waiter{id: lock.TokenID(token), entry: entry, grant: make(chan grant, 1), poke: make(chan struct{}, 1)}
	g.waiters[w], f.waiters[w.id] = true, w
	return w, g
}

// exit unregisters a waiter. A group without a reader goes with its last
// waiter; one with a reader lingers (see read).
func (f *Lock) exit(w *waiter, g *group) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.waiters, w.id)
	delete(g.waiters, w)
	if g.idle = time.Now(); len(g.waiters) == 0 && g.from == "" && f.keys[g.q.keys[0]] == g {
		delete(f.keys, g.q.keys[0])
	}
}

func (f *Lock) reading(g *group) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return g.from != ""
}

// answered takes in an answered try of w that did not win: w is queued
// now, and g's reader, started after r.last if none runs, checks at each
// tick that the queue still holds it (see tick). It reports true when w
// must ask again: its try was sent before the reader started, and
// another's try started it after a later ID, past where a hand-off to w
// may lie. (A later try needs no check: a hand-off after it comes after
// the reader's start. Nor must it have one: after a Redis restart the
// stream is empty, its last ID 0-0, and every try would ask again.)
func (f *Lock) answered(w *waiter, g *group, r tried) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.queued = true
	switch {
	case g.from == "" && !f.closed && r.last != "":
		var ctx context.Context
		ctx, g.stop = context.WithCancel(context.Background())
		g.from, g.started, f.readers[g] = r.last, time.Now(), true
		f.wg.Add(1)
		go f.read(ctx, g, r.last, r.sent)
	case r.last != "" && r.sent.Before(g.started) && slices.Compare(streamID(r.last), streamID(g.from)) < 0:
		return true
	}
	return false
}

// streamID is a stream entry's ID, "ms-seq", as two numbers.
func streamID(s string) []uint64 {
	ms, seq, _ := strings.Cut(s, "-")
	a, _ := strconv.ParseUint(ms, 10, 64)
	b, _ := strconv.ParseUint(seq, 10, 64)
	return []uint64{a, b}
}

// pokeAll tells each waiter of g to ask Redis again; call with f.mu held.
func pokeAll(g *group) {
	for w := range g.waiters {
		poke(w)
	}
}

func poke(w *waiter) {
	select {
	case w.poke <- struct{}{}:
	default: // poked already
	}
}

// read is g's reader: it reads the hand-offs after cursor (all written
// after since) until g has had no waiter for linger or the Lock closes,
// and ticks every tick. After an error it pauses and reads on from where
// it was: the stream holds what came meanwhile. An entry an XREAD returns
// was written after the XREAD before it was sent: the lease it hands over
// began after that.
func (f *Lock) read(ctx context.Context, g *group, cursor string, since time.Time) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.readers, g)
		f.mu.Unlock()
		g.stop()
	}()
	next, pause := time.Now().Add(tick), time.Duration(0)
	for ctx.Err() == nil {
		f.mu.Lock()
		idle := len(g.waiters) == 0
		if idle && time.Since(g.idle) > linger {
			if f.keys[g.q.keys[0]] == g {
				delete(f.keys, g.q.keys[0])
			}
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if wait := time.Until(next); wait > 0 {
			sent := time.Now()
			streams, err := f.reads.XRead(ctx, &redis.XReadArgs{Streams: []string{g.q.keys[4], cursor}, Block: max(wait, time.Millisecond)}).Result()
			if err != nil && err != redis.Nil {
				pause = min(max(2*pause, 10*time.Millisecond), tick)
				select {
				case <-ctx.Done():
				case <-time.After(pause):
				}
				continue
			}
			pause = 0
			for _, s := range streams {
				for _, m := range s.Messages {
					cursor = m.ID
					f.deliver(m.Values["h"], since)
				}
			}
			since = sent
		}
		if time.Now().After(next) {
			next = time.Now().Add(tick)
			if !idle {
				f.tick(ctx, g)
			}
		}
	}
}

// deliver wakes the waiter a hand-off names, if it is one of this Lock's.
func (f *Lock) deliver(h any, since time.Time) {
	s, _ := h.(string)
	p := strings.Fields(s)
	if len(p) != 3 || p[2] != f.name {
		return
	}
	fence, err := strconv.ParseInt(p[1], 10, 64)
	f.mu.Lock()
	w := f.waiters[p[0]]
	f.mu.Unlock()
	if w != nil && err == nil {
		select {
		case w.grant <- grant{fence, since}:
		default: // one hand-off per token
		}
	}
}

// tick renews the Lock's presence on g's key, serves the queue if the
// lock is free (its holder expired), and pokes each queued waiter of g
// that the queue no longer holds: one handed the lock whose hand-off went
// unread, one a hand-off skipped while the Lock's presence had lapsed, or
// one whose entry Redis lost (FLUSHDB, a restart, the queue expired while
// the machine stalled). Asked again, a waiter takes the lock if it holds
// it, and queues anew if not. A key that holds something other than a
// lock pokes them all. One pass over the queue per tick, not per waiter.
func (f *Lock) tick(ctx context.Context, g *group) {
	f.mu.Lock()
	var ws []*waiter
	var entries []string
	for w := range g.waiters {
		if w.queued {
			ws, entries = append(ws, w), append(entries, w.entry)
		}
	}
	f.mu.Unlock()
	r, err := g.q.try(ctx, f.rdb, f.name, "", "", "tick", entries...)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, i := range r.gone {
		if g.waiters[ws[i]] { // it may have left meanwhile
			poke(ws[i])
		}
	}
	if errors.Is(err, lock.ErrWrongType) {
		pokeAll(g)
	}
}

// Close stops the Lock's readers and takes its presence off their keys,
// so that hand-offs skip its waiters at once; those still waiting return
// an error matching ErrClosed. Locks it handed out stay held. It waits for
// the readers for at most a second (an XREAD a frozen Redis does not
// answer ends when it times out), and past that leaves the presence to
// expire. It returns nil; a second Close does nothing.
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
	var keys []*fairKeys
	for g := range f.readers {
		g.stop()
		keys = append(keys, g.q)
	}
	f.mu.Unlock()
	stopped := make(chan struct{})
	go func() { f.wg.Wait(); close(stopped) }()
	select {
	case <-stopped:
	case <-time.After(time.Second):
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, q := range keys {
		once.Send(ctx, f.rdb, "zrem", q.keys[3], f.name)
	}
	return nil
}
