package main

// The flags, and phases 3 and 4: a crowd of spenders, fenced, then
// without Redis at all.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"example.com/walletlock/internal/fencing"
	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// maxN bounds -n below harness.MaxN: phase 3 hands the lease from spender
// to spender, about 10 ms each, and must end within its hang guard.
const maxN = 1000

// config is what the flags set.
type config struct {
	ttl, pause, work time.Duration
	n, stalls        int
	only             string // -phase
}

func flags(h *harness.Program) *config {
	c := &config{}
	h.Flags.DurationVar(&c.ttl, "ttl", 200*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	h.Flags.DurationVar(&c.pause, "pause", 400*time.Millisecond, "how long a stalled holder of phase 3 pauses between its read and its write; longer than -ttl, at most 1h")
	h.Flags.DurationVar(&c.work, "work", 2*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	h.Flags.IntVar(&c.n, "n", 50, fmt.Sprintf("spenders in phases 3 and 4, at most %d", maxN))
	h.Flags.IntVar(&c.stalls, "stalls", 5, "how many spenders of phase 3 stall past the TTL")
	h.Flags.StringVar(&c.only, "phase", "all", "which phase to run: 1, 1b, 2, 3, 4 or all")
	return c
}

// check picks the phases -phase names, and checks the flags; id is the
// wallet's.
func (c *config) check(id int64, phases []harness.Phase) ([]harness.Phase, []error) {
	chosen, err := harness.Choose("-phase", c.only, phases)
	switch {
	case err != nil:
	case lock.CheckTTL(c.ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(c.ttl))
	case c.pause <= c.ttl:
		err = fmt.Errorf("-pause %v must be longer than -ttl %v: a stalled holder must outlive its lease", c.pause, c.ttl)
	case c.work < 0 || c.n < 1 || id < 1:
		err = fmt.Errorf("-work must be at least 0, -n and -wallet-id at least 1; got %v, %d and %d", c.work, c.n, id)
	case c.stalls < 0 || c.stalls > c.n:
		err = fmt.Errorf("-stalls must be between 0 and -n (%d), got %d", c.n, c.stalls)
	}
	return chosen, []error{err, harness.CheckMax("-n", c.n, maxN), harness.CheckDuration("-ttl", c.ttl),
		harness.CheckDuration("-pause", c.pause), harness.CheckDuration("-work", c.work)}
}

// row is what the harness needs to know of the chosen phases.
func (c *config) row(chosen []harness.Phase) harness.Row {
	return harness.Row{
		NeedRedis: slices.ContainsFunc(chosen, func(p harness.Phase) bool { return p.Name != "4" }),
		TTL:       c.ttl,
		// A phase that runs past a minute beyond its flags' work and stalls
		// has hung. (The flags' bounds keep this from overflowing.)
		Limit:    time.Minute + time.Duration(c.n)*c.work + time.Duration(c.stalls)*c.pause,
		Spenders: c.n,
	}
}

// report is the run's "config" in -json.
func (c *config) report(h *harness.Program) map[string]any {
	return map[string]any{"ttl": c.ttl.String(), "pause": c.pause.String(), "work": c.work.String(),
		"spenders": c.n, "stalls": c.stalls, "wallet_id": h.WalletID(), "prefix": h.Prefix()}
}

// Phase 3. Every spender goes through fencing.Do; a few, chosen at random,
// pause past the TTL between their read and their write, as in a long GC:
// nothing tells them their lease is gone, and they write when they wake.
// The wallet holds enough for everyone, so every stalled spender has a
// write to be refused.
func (c *config) fencedSpenders(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	start := int64(c.n) * amount
	if err := r.Fresh(ctx, start); err != nil {
		return harness.Outcome{}, err
	}
	stalled, fences, errs := make([]bool, c.n), make([]int64, c.n), make([]error, c.n)
	for _, i := range rand.Perm(c.n)[:c.stalls] {
		stalled[i] = true
	}
	tally := wallet.Hammer(c.n, func(i int) (bool, error) {
		ok, err := r.Spend(ctx, i, amount, func(ctx context.Context) (bool, error) {
			return fencing.Do(ctx, r.Redis, r.LockKey, c.ttl, func(ctx context.Context, fence int64) (bool, error) {
				fences[i] = fence
				work := c.work
				if stalled[i] {
					work = c.pause // past the lease, between the read and the write
				}
				return r.Store.SpendFenced(ctx, r.ID, fence, amount, work)
			})
		})
		errs[i] = err
		return ok, err
	})
	f, err := fencing.Count(start, tally, fences, errs, stalled)
	if err == nil {
		f.HighestFence, err = r.Store.Fence(ctx, r.ID)
	}
	if err != nil {
		return harness.Outcome{}, err
	}
	o, err := r.Outcome(ctx, start, amount, tally.Accepted, tally.Unknown, &f, append([]string{fmt.Sprintf(
		"%d spenders take %d each from %d; stalled for %v between read and write (TTL %v): %d", c.n, amount, start, c.pause, c.ttl, c.stalls)},
		f.Lines()...)...)
	f.Landed = o.Verdict.Landed
	return o, err
}

// Phase 4. No lock and no Redis: each spender reads the balance and the
// row's version, and its UPDATE lands only if the version is unchanged;
// otherwise it reads again. For teams that own the database, this is all
// the correctness the wallet needs.
func (c *config) versionColumn(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	if err := r.Fresh(ctx, initial); err != nil {
		return harness.Outcome{}, err
	}
	var conflicts atomic.Int64
	tally := wallet.Hammer(c.n, func(i int) (bool, error) {
		return r.Spend(ctx, i, amount, func(ctx context.Context) (bool, error) {
			ok, n, err := r.Store.SpendVersioned(ctx, r.ID, amount, c.work)
			conflicts.Add(int64(n))
			return ok, err
		})
	})
	for _, err := range tally.Errors {
		if !errors.Is(err, wallet.ErrUnknownOutcome) {
			return harness.Outcome{}, fmt.Errorf("%d of %d spends failed, first: %w", len(tally.Errors)-tally.Unknown, c.n, err)
		}
	}
	v := versions{Spenders: c.n, Conflicts: conflicts.Load(), Unknown: tally.Unknown}
	o, err := r.Outcome(ctx, initial, amount, tally.Accepted, tally.Unknown, &v,
		fmt.Sprintf("%d spenders take %d each from %d, no lock: UPDATE ... WHERE version = the version read", c.n, amount, initial),
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
