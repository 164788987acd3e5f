package fair

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock/internal/core"
)

// This file is how a Lock's waiters hear of a hand-off. A release appends
// "id fence fair" to the key's hand-off stream (see queue.lua). A stream
// keeps what was written, so nothing is lost while nobody reads: while
// some of a Lock's goroutines wait on a key, one reader per key reads the
// stream with a blocking XREAD from where it left off, and wakes the
// waiter an entry names. The same reader ticks (see tick): it renews the
// Lock's presence on the key and serves the queue when its holder
// expired.

// waiter is one Acquire call that is waiting.
type grant struct {
	fence int64     // -1: skipped for a broken counter
	since time.Time // the lease began after this
}

type waiter struct {
	id    string        // how a hand-off names it (see handoffID)
	grant chan grant    // the hand-off that named it
	poke  chan struct{} // ask Redis again
}

// group is a Lock's waiters on one key, and its reader there. Its fields
// are guarded by Lock.mu.
type group struct {
	q       *fairKeys
	waiters map[*waiter]bool
	from    string             // the ID the reader started reading after; "" until it runs
	stop    context.CancelFunc // ends the reader's read at once (Close)
	present bool               // a try or tick was answered: a lapse after that is news
	idle    time.Time          // when its last waiter left
}

// enter registers a waiter for token on q's key; nil after Close.
func (f *Lock) enter(q *fairKeys, token string) (*waiter, *group) {
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
	w := &waiter{id: handoffID(token), grant: make(chan grant, 1), poke: make(chan struct{}, 1)}
	g.waiters[w] = true
	f.waiters[w.id] = w
	return w, g
}

// exit unregisters a waiter. A group without a reader goes with its last
// waiter; one with a reader lingers (see read).
func (f *Lock) exit(w *waiter, g *group) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.waiters, w.id)
	delete(g.waiters, w)
	if len(g.waiters) == 0 {
		g.idle = time.Now()
		if g.from == "" && f.keys[g.q.keys[0]] == g {
			delete(f.keys, g.q.keys[0])
		}
	}
}

// reading reports whether g's reader runs.
func (f *Lock) reading(g *group) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return g.from != ""
}

// linger is how long a reader goes on with no waiter on its key, so that
// a busy key does not start a reader for every wait.
const linger = time.Second

// answered takes in what an answered try of w found: it starts the
// group's reader after r.last if none runs, and nudges every waiter of
// the group when the Lock's presence had lapsed (hand-offs may have
// skipped them). It reports true when a hand-off to w may lie before
// where the running reader started, so that w must ask again: a try of
// another waiter started it from a later ID.
func (f *Lock) answered(ctx context.Context, w *waiter, g *group, r tried) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if r.lapsed && g.present {
		pokeAll(g)
	}
	g.present = true
	switch {
	case g.from == "" && !f.closed:
		g.from = r.last
		var rctx context.Context
		rctx, g.stop = context.WithCancel(context.Background())
		f.readers[g] = true
		f.wg.Add(1)
		go f.read(rctx, g, r.last, r.sent)
	case r.last != "" && before(r.last, g.from):
		return true
	}
	return false
}

// before reports whether stream ID a comes before b ("ms-seq").
func before(a, b string) bool {
	ams, aseq, _ := strings.Cut(a, "-")
	bms, bseq, _ := strings.Cut(b, "-")
	x, _ := strconv.ParseUint(ams, 10, 64)
	y, _ := strconv.ParseUint(bms, 10, 64)
	if x != y {
		return x < y
	}
	s, _ := strconv.ParseUint(aseq, 10, 64)
	t, _ := strconv.ParseUint(bseq, 10, 64)
	return s < t
}

// pokeAll tells each waiter of g to ask Redis again; call with f.mu held
// or from the reader.
func pokeAll(g *group) {
	for w := range g.waiters {
		poke(w)
	}
}

func (f *Lock) pokeAll(g *group) {
	f.mu.Lock()
	defer f.mu.Unlock()
	pokeAll(g)
}

func poke(w *waiter) {
	select {
	case w.poke <- struct{}{}:
	default: // poked already
	}
}

// read is a group's reader: it reads the key's hand-offs after cursor,
// which were all written after since, until the group has had no waiter
// for linger or the Lock closes, and ticks every tick. After an error it pauses, then
// reads on from where it was: the stream still holds what was added
// meanwhile. An entry that an XREAD returns was written after the XREAD
// before it was sent, which is when the lease it hands over began at the
// earliest.
func (f *Lock) read(ctx context.Context, g *group, cursor string, since time.Time) {
	defer f.wg.Done()
	defer func() {
		f.mu.Lock()
		delete(f.readers, g)
		f.mu.Unlock()
		g.stop()
	}()
	next, pause := time.Now().Add(tick), time.Duration(0)
	for {
		f.mu.Lock()
		left := len(g.waiters) == 0 && time.Since(g.idle) > linger
		if left {
			delete(f.keys, g.q.keys[0])
		}
		f.mu.Unlock()
		if left || ctx.Err() != nil {
			return
		}
		if wait := time.Until(next); wait > 0 {
			sent := time.Now()
			streams, err := f.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{g.q.stream(), cursor}, Block: max(wait, time.Millisecond)}).Result()
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && err != redis.Nil:
				pause = min(max(2*pause, 10*time.Millisecond), tick)
				select {
				case <-ctx.Done():
					return
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
			f.tick(ctx, g)
		}
	}
}

// deliver wakes the waiter a hand-off names, if it is one of this Lock's.
func (f *Lock) deliver(h any, since time.Time) {
	s, _ := h.(string)
	parts := strings.Fields(s)
	if len(parts) != 3 || parts[2] != f.name {
		return
	}
	fence, err := strconv.ParseInt(parts[1], 10, 64)
	f.mu.Lock()
	w := f.waiters[parts[0]]
	f.mu.Unlock()
	if w != nil && err == nil {
		select {
		case w.grant <- grant{fence, since}:
		default: // one hand-off per token
		}
	}
}

// tick renews the Lock's presence on g's key and serves its queue if the
// lock is free (its holder expired, or released without a hand-off). When
// the lock is held by a waiter of g that still waits, its hand-off was not
// read (the stream was trimmed past it, or Redis restarted with the lock
// and without the stream): the waiter is poked to ask. A lapsed presence,
// or a key that holds something other than a lock, pokes every waiter.
func (f *Lock) tick(ctx context.Context, g *group) {
	f.mu.Lock()
	idle := len(g.waiters) == 0
	f.mu.Unlock()
	if idle {
		return // nobody to keep present
	}
	r, err := g.q.try(ctx, f.rdb, f.name, "", "", "tick")
	f.mu.Lock()
	defer f.mu.Unlock()
	if refused(err) {
		pokeAll(g) // each waiter's try says why
	}
	if err != nil {
		return
	}
	if w := f.waiters[r.holder]; w != nil && g.waiters[w] {
		poke(w)
	}
	if r.lapsed {
		pokeAll(g)
	}
}

// Close stops the Lock's readers and takes its presence off the keys its
// waiters wait on, so that hand-offs skip them at once; the waiters still
// waiting return an error matching ErrClosed. It waits for the readers to
// stop and returns nil; a second Close does nothing. A nil Lock's Close
// does nothing.
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
	f.wg.Wait()
	if len(keys) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		for _, q := range keys {
			core.Send(ctx, f.rdb, "zrem", q.keys[3], f.name)
		}
	}
	return nil
}
