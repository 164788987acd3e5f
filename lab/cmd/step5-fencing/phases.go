package main

// The phases. 1, 1b and 2 tell one story (holders, in main.go), two
// holders of one lease on one wallet; what differs is what a holder does
// (its moves) and, in 1b, when A wakes. The program's order sets the
// story's, not sleeps: the one wait that is a matter of time is B's
// acquire, which retries until A's lease has expired, and Redis keeps
// that time, so A's lease has expired before A writes on every run,
// however slow the machine. Then 3, a crowd of fenced spenders, and 4, no
// Redis at all.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"example.com/walletlock/lab/internal/fencing"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
	"example.com/walletlock/lab/wallet/postgres"
)

// moves are what each holder does: take the lease, read the balance, write
// the balance less the amount. fence is the lease's (0 without fencing).
type moves struct {
	acquire func(ctx context.Context) (*lock.Lock, error)
	read    func(ctx context.Context, fence int64) (int64, error)
	write   func(ctx context.Context, fence, balance int64) error
}

// play is a phase that plays the two holders on a fresh row and fence
// counter, each taking the lease with acquire, and reading and writing the
// row with read and write given its fence. In 1b A wakes between B's read
// and B's write.
func (c *config) play(phase string, acquire func(context.Context, lock.Client, string, time.Duration) (*lock.Lock, error),
	read func(*postgres.Store, context.Context, int64, int64) (int64, error),
	write func(*postgres.Store, context.Context, int64, int64, int64) error) func(context.Context, *fencing.Run) (harness.Outcome, error) {
	return func(ctx context.Context, r *fencing.Run) (harness.Outcome, error) {
		if err := r.Fresh(ctx, initial); err != nil {
			return harness.Outcome{}, err
		}
		call := history.Now() // the two spends' history: both from here to their end
		s, err := holders(ctx, c.Work, phase == "1b", moves{
			acquire: func(ctx context.Context) (*lock.Lock, error) { return acquire(ctx, r.Redis, r.LockKey, c.TTL) },
			read:    func(ctx context.Context, fence int64) (int64, error) { return read(r.Store, ctx, r.ID, fence) },
			write:   func(ctx context.Context, fence, bal int64) error { return write(r.Store, ctx, r.ID, fence, bal) },
		})
		if s.Stale = map[bool]string{false: "A", true: "B"}[phase == "1b"]; err == nil && s.AErr != nil && !errors.Is(s.AErr, wallet.ErrStaleFence) {
			err = fmt.Errorf("holder A: %w", s.AErr) // a refusal for a stale fence is the story; anything else ends it
		}
		if err == nil {
			s.Record(r.History(), r.ID, call, amount)
			s.Highest, err = r.Store.Fence(ctx, r.ID)
		}
		if err != nil {
			return harness.Outcome{}, err
		}
		return r.Outcome(ctx, initial, amount, s.Accepted(), 0, s, s.Lines(phase, c.TTL, amount)...)
	}
}

// config is what the flags set (fencing.Flags, which checks them).
type config fencing.Flags

// Phase 3. Every spender goes through fencing.Fenced; a few, chosen at
// random, pause past the TTL between their read and their write, as in a
// long GC, and write when they wake. The wallet holds enough for everyone,
// so every stalled spender has a write to be refused.
func (c *config) fencedSpenders(ctx context.Context, r *fencing.Run) (harness.Outcome, error) {
	start := int64(c.N) * amount
	if err := r.Fresh(ctx, start); err != nil {
		return harness.Outcome{}, err
	}
	stalled, fences, errs := make([]bool, c.N), make([]int64, c.N), make([]error, c.N)
	for _, i := range rand.Perm(c.N)[:c.Stalls] {
		stalled[i] = true
	}
	tally := wallet.Hammer(c.N, func(i int) (bool, error) {
		ok, err := r.Spend(ctx, i, amount, func(ctx context.Context) (bool, error) {
			return fencing.Fenced(ctx, r.Redis, r.LockKey, c.TTL, func(ctx context.Context, fence int64) (bool, error) {
				fences[i] = fence
				work := c.Work
				if stalled[i] {
					work = c.Pause // past the lease, between the read and the write
				}
				return r.Store.SpendFenced(ctx, r.ID, fence, amount, work)
			})
		})
		errs[i] = err
		return ok, err
	})
	f, err := r.CountRefusals(ctx, start, tally, fences, errs, stalled)
	if err != nil {
		return harness.Outcome{}, err
	}
	o, err := r.Outcome(ctx, start, amount, tally.Accepted, tally.Unknown, &f, append([]string{fmt.Sprintf(
		"%d spenders take %d each from %d; stalled for %v between read and write (TTL %v): %d", c.N, amount, start, c.Pause, c.TTL, c.Stalls)},
		f.Lines()...)...)
	f.Landed = o.Verdict.Landed
	return o, err
}

// Phase 4. No lock and no Redis: a spender's UPDATE lands only if the
// row's version is the one it read; otherwise it reads again. For teams
// that own the database, this is all the correctness the wallet needs.
func (c *config) versionColumn(ctx context.Context, r *fencing.Run) (harness.Outcome, error) {
	if err := r.Fresh(ctx, initial); err != nil {
		return harness.Outcome{}, err
	}
	var conflicts atomic.Int64
	tally := wallet.Hammer(c.N, func(i int) (bool, error) {
		return r.Spend(ctx, i, amount, func(ctx context.Context) (bool, error) {
			ok, n, err := r.Store.SpendVersioned(ctx, r.ID, amount, c.Work)
			conflicts.Add(int64(n))
			return ok, err
		})
	})
	if err := harness.Failed(tally, c.N); err != nil {
		return harness.Outcome{}, err
	}
	v := versions{Spenders: c.N, Conflicts: conflicts.Load(), Unknown: tally.Unknown}
	o, err := r.Outcome(ctx, initial, amount, tally.Accepted, tally.Unknown, &v,
		fmt.Sprintf("%d spenders take %d each from %d, no lock: UPDATE ... WHERE version = the version read", c.N, amount, initial),
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

// A plain read and a plain write, which know no fence (phases 1 and 1b).
func balance(s *postgres.Store, ctx context.Context, id, _ int64) (int64, error) {
	return s.Balance(ctx, id)
}
func write(s *postgres.Store, ctx context.Context, id, _, bal int64) error {
	return s.Write(ctx, id, bal)
}
