package main

// The five phases, in the lesson's order. Each returns its check, the
// lines of its story, and its figures for -json.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"example.com/walletlock/internal/fencing"
	"example.com/walletlock/internal/timeline"
	"example.com/walletlock/internal/walletrun"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	initial = 100 // starting balance of phases 1, 1b, 2 and 4
	amount  = 10  // every spend
)

// Phase 1. A plain lease, and SQL that writes whatever it is given.
func pausedHolder(ctx context.Context, e env) (walletrun.Outcome, error) {
	return e.play(ctx, timeline.Unfenced, timeline.Moves{
		Acquire: func(ctx context.Context) (*lock.Lock, error) { return lock.Acquire(ctx, e.Redis, e.LockKey, e.ttl) },
		Read:    func(ctx context.Context, _ int64) (int64, error) { return e.Store.Balance(ctx, e.ID) },
		Write:   func(ctx context.Context, _, bal int64) error { return e.Store.Write(ctx, e.ID, bal) },
	})
}

// Phase 1b. Fences, checked on write only: the reads claim nothing, and a
// write lands when its fence is above the row's (WriteFencedOnly). A wakes
// after B's read and before B's write, and both writes land.
func fenceOnWriteOnly(ctx context.Context, e env) (walletrun.Outcome, error) {
	return e.play(ctx, timeline.FencedOnWrite, timeline.Moves{
		Acquire: e.acquireFenced,
		Read:    func(ctx context.Context, _ int64) (int64, error) { return e.Store.Balance(ctx, e.ID) },
		Write: func(ctx context.Context, fence, bal int64) error {
			return e.Store.WriteFencedOnly(ctx, e.ID, fence, bal)
		},
	})
}

// Phase 2. The timeline of phase 1, fenced and claimed on read: the read
// stamps the row with the reader's fence (Claim), and the write lands only
// while the row still carries it (WriteFenced).
func fenceClaimedOnRead(ctx context.Context, e env) (walletrun.Outcome, error) {
	return e.play(ctx, timeline.ClaimedOnRead, timeline.Moves{
		Acquire: e.acquireFenced,
		Read:    func(ctx context.Context, fence int64) (int64, error) { return e.Store.Claim(ctx, e.ID, fence) },
		Write:   func(ctx context.Context, fence, bal int64) error { return e.Store.WriteFenced(ctx, e.ID, fence, bal) },
	})
}

// Phase 3. Every spender goes through fencing.Do; a few, chosen at random,
// pause past the TTL between their read and their write, as in a long GC:
// nothing tells them their lease is gone, and they write when they wake.
// The wallet holds enough for everyone, so every stalled spender has a
// write to be refused.
func fencedSpenders(ctx context.Context, e env) (walletrun.Outcome, error) {
	start := int64(e.n) * amount
	if err := e.Fresh(ctx, start); err != nil {
		return walletrun.Outcome{}, err
	}
	stalled, fences, errs := make([]bool, e.n), make([]int64, e.n), make([]error, e.n)
	for _, i := range rand.Perm(e.n)[:e.stalls] {
		stalled[i] = true
	}
	tally := wallet.Hammer(e.n, func(i int) (bool, error) {
		ok, err := fencing.Do(ctx, e.Redis, e.LockKey, e.ttl, func(ctx context.Context, fence int64) (bool, error) {
			fences[i] = fence
			work := e.work
			if stalled[i] {
				work = e.pause // past the lease, between the read and the write
			}
			return e.Store.SpendFenced(ctx, e.ID, fence, amount, work)
		})
		errs[i] = err
		return ok, err
	})
	c, err := fencing.Count(start, tally, fences, errs, stalled)
	if err == nil {
		c.HighestFence, err = e.Store.Fence(ctx, e.ID)
	}
	if err != nil {
		return walletrun.Outcome{}, err
	}
	o, err := e.Outcome(ctx, start, amount, tally.Accepted, tally.Unknown, &c, append([]string{fmt.Sprintf(
		"%d spenders take %d each from %d; stalled for %v between read and write (TTL %v): %d", e.n, amount, start, e.pause, e.ttl, e.stalls)},
		c.Lines()...)...)
	c.Landed = o.Verdict.Landed
	return o, err
}

// Phase 4. No lock and no Redis: each spender reads the balance and the
// row's version, and its UPDATE lands only if the version is unchanged;
// otherwise it reads again. For teams that own the database, this is all
// the correctness the wallet needs.
func versionColumn(ctx context.Context, e env) (walletrun.Outcome, error) {
	if err := e.Fresh(ctx, initial); err != nil {
		return walletrun.Outcome{}, err
	}
	var conflicts atomic.Int64
	tally := wallet.Hammer(e.n, func(int) (bool, error) {
		ok, n, err := e.Store.SpendVersioned(ctx, e.ID, amount, e.work)
		conflicts.Add(int64(n))
		return ok, err
	})
	for _, err := range tally.Errors {
		if !errors.Is(err, wallet.ErrUnknownOutcome) {
			return walletrun.Outcome{}, fmt.Errorf("%d of %d spends failed, first: %w", len(tally.Errors)-tally.Unknown, e.n, err)
		}
	}
	v := versions{Spenders: e.n, Conflicts: conflicts.Load(), Unknown: tally.Unknown}
	o, err := e.Outcome(ctx, initial, amount, tally.Accepted, tally.Unknown, &v,
		fmt.Sprintf("%d spenders take %d each from %d, no lock: UPDATE ... WHERE version = the version read", e.n, amount, initial),
		fmt.Sprintf("version conflicts: %d, each one a spend that read again and retried", v.Conflicts))
	v.Landed = o.Verdict.Landed
	return o, err
}

// versions is what phase 4 counted.
type versions struct {
	Spenders  int   `json:"spenders"`
	Conflicts int64 `json:"conflicts"` // writes that found the version changed, and read again
	Unknown   int   `json:"unknown"`   // spends whose outcome is unknown
	Landed    int   `json:"landed"`    // how many of them the balance says landed; -1 if none fits
}

// play plays the two holders of phases 1, 1b and 2 (package timeline) on
// a fresh row and fence counter.
func (e env) play(ctx context.Context, story timeline.Story, m timeline.Moves) (walletrun.Outcome, error) {
	if err := e.Fresh(ctx, initial); err != nil {
		return walletrun.Outcome{}, err
	}
	t, err := timeline.Play(ctx, e.Store, e.ID, story, amount, e.work, m)
	if err != nil {
		return walletrun.Outcome{}, err
	}
	return e.Outcome(ctx, initial, amount, t.Accepted(), 0, t, t.Lines(e.ttl)...)
}

func (e env) acquireFenced(ctx context.Context) (*lock.Lock, error) {
	return lock.AcquireFenced(ctx, e.Redis, e.LockKey, e.ttl)
}
