package main

// The three phases. Each starts from a fresh balance and a free lock key,
// so a phase run alone (-phase 2) tells the same story as in a full run.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// env is what the flags set, and the run's client and keys.
type env struct {
	ttl, work           time.Duration
	n                   int
	balanceKey, lockKey string
	rdb                 redis.UniversalClient
	r                   *harness.Run // for the clean-up context, which Ctrl-C does not end
}

// choose picks the phases -phase names, each running on e as the flags
// set it, and checks the flags.
func (e *env) choose(only string) ([]harness.Phase, []error) {
	names, err := harness.Pick("-phase", only, []string{"1", "2", "3"})
	var chosen []harness.Phase
	for _, p := range phases {
		if slices.Contains(names, p.name) {
			chosen = append(chosen, harness.Phase{Name: p.name, Run: func(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
				e.rdb, e.r = r.Redis, r
				return p.run(ctx, *e)
			}})
		}
	}
	switch {
	case err != nil:
	case lock.CheckTTL(e.ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(e.ttl))
	case e.n < 1 || e.work < 0:
		err = errors.New("-n must be at least 1 and -work at least 0")
	}
	// The bounds keep a spender's wait, n x (work + ttl), far from overflowing.
	return chosen, []error{err, harness.CheckMax("-n", e.n, harness.MaxN), harness.CheckDuration("-ttl", e.ttl), harness.CheckDuration("-work", e.work)}
}

// fresh restores the balance and frees the lock key: each phase starts
// from the same state, so a phase run alone tells the same story.
func (e env) fresh(ctx context.Context) error {
	if err := e.rdb.Del(ctx, e.lockKey).Err(); err != nil {
		return fmt.Errorf("free %s: %w", e.lockKey, err)
	}
	err := wallet.Set(ctx, e.rdb, e.balanceKey, initial)
	e.r.Record(wallet.DemoWallet, initial) // its spends' history starts here (e.r.Spend)
	return err
}

// check reads the balance back, even after Ctrl-C, and checks it against
// the accepted spends and those whose outcome is unknown.
func (e env) check(accepted, unknown int) (wallet.Verdict, error) {
	ctx, cancel := e.r.Cleanup()
	defer cancel()
	balance, err := wallet.Balance(ctx, e.rdb, e.balanceKey)
	if err != nil {
		return wallet.Verdict{}, err
	}
	return wallet.CheckUnknown(initial, amount, accepted, unknown, balance), nil
}

// acquire takes the lock, waiting long enough for every spender to get its
// turn, so that the bound only stops a hang.
func (e env) acquire(ctx context.Context) (*lock.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(e.n)*(e.work+e.ttl)+5*time.Second)
	defer cancel()
	return lock.Acquire(ctx, e.rdb, e.lockKey, e.ttl)
}

// figures are what a phase saw, beside its check in the JSON.
type figures struct {
	NotHeld  int    `json:"releases_not_held"` // releases that found the lease gone
	Releases int    `json:"releases"`          // releases attempted
	Unknown  int    `json:"unknown_spends"`    // spends whose outcome is unknown (sent, no reply)
	Cause    string `json:"cause,omitempty"`   // phase 3: why the work was cancelled
}

// Phase 1: the work outlives the TTL and nothing extends the lease.
func noWatchdog(ctx context.Context, e env) (harness.Outcome, error) {
	return crowd(ctx, e, false, fmt.Sprintf("ttl %v, work %v, no watchdog", e.ttl, e.work))
}

// Phase 2: the same, with a watchdog refreshing the lease during the work.
func watchdog(ctx context.Context, e env) (harness.Outcome, error) {
	return crowd(ctx, e, true, fmt.Sprintf("ttl %v, work %v, watchdog every %v", e.ttl, e.work, every(e.ttl)))
}

// crowd runs e.n spenders at once, each holding the lock for its spend.
func crowd(ctx context.Context, e env, watch bool, setting string) (harness.Outcome, error) {
	o, f := harness.Outcome{Setting: setting}, figures{}
	if err := e.fresh(ctx); err != nil {
		return o, err
	}
	var mu sync.Mutex
	spend := func(ctx context.Context) (bool, error) { // one spender; e.r.Spend records it
		l, err := e.acquire(ctx)
		if err != nil {
			return false, err
		}
		work, stop := ctx, context.CancelFunc(func() {})
		if watch {
			// Refreshes every ttl/3; cancels work if a refresh fails.
			work, stop = l.Watch(ctx)
		}
		ok, err := wallet.Spend(work, e.rdb, e.balanceKey, amount, e.work)
		stop()
		rerr := l.Release(ctx)
		mu.Lock()
		defer mu.Unlock()
		f.Releases++
		switch {
		case errors.Is(rerr, lock.ErrNotHeld):
			f.NotHeld++ // the write above, if any, has landed all the same
		case rerr != nil:
			o.Problems = append(o.Problems, rerr.Error())
		}
		return ok, err
	}
	tally := wallet.Hammer(e.n, func(i int) (bool, error) { return e.r.Spend(ctx, i, amount, spend) })
	o.Story = fmt.Sprintf("%d of %d releases found the lease gone and deleted nothing", f.NotHeld, f.Releases)
	f.Unknown = tally.Unknown
	o.Figures = f
	v, err := e.check(tally.Accepted, tally.Unknown)
	o.Verdict = v
	if line := harness.Outcomes(tally, e.n, o.Verdict); line != "" {
		o.Problems = append(o.Problems, line)
	}
	if watch && f.NotHeld > 0 {
		o.Problems = append(o.Problems, fmt.Sprintf("%d releases found the lease gone: the watchdog did not keep it", f.NotHeld))
	}
	return o, err
}

// Phase 3: the lease is lost while the work runs.
func takenOver(ctx context.Context, e env) (harness.Outcome, error) {
	o, f := harness.Outcome{}, figures{Releases: 1}
	o.Setting = fmt.Sprintf("lease taken over %v into the work, watchdog every %v", e.work/3, every(e.ttl))
	if err := e.fresh(ctx); err != nil {
		return o, err
	}
	l, err := e.acquire(ctx)
	if err != nil {
		return o, err
	}
	work, stop := l.Watch(ctx)
	// Another client (here the same connection pool stands in for another
	// server) writes its own token over ours a third into the work.
	tookOver := make(chan error, 1)
	go func() {
		select {
		case <-time.After(e.work / 3):
			tctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			tookOver <- e.rdb.Set(tctx, e.lockKey, "another-holder", e.ttl).Err()
		case <-work.Done():
			tookOver <- nil
		}
	}()
	ok, spendErr := e.r.Spend(work, 0, amount, func(ctx context.Context) (bool, error) {
		return wallet.Spend(ctx, e.rdb, e.balanceKey, amount, e.work)
	})
	cause := context.Cause(work)
	stop()
	if err := <-tookOver; err != nil {
		return o, err
	}
	switch rerr := l.Release(ctx); {
	case errors.Is(rerr, lock.ErrNotHeld):
		f.NotHeld = 1 // and the other holder's key is left alone
	case rerr != nil:
		o.Problems = append(o.Problems, rerr.Error())
	default:
		o.Problems = append(o.Problems, "the release succeeded: the takeover did not happen")
	}
	accepted, unknown := 0, 0
	switch {
	case ok:
		accepted = 1
	case errors.Is(spendErr, wallet.ErrUnknownOutcome):
		unknown = 1
	}
	if !errors.Is(spendErr, lock.ErrNotHeld) {
		o.Problems = append(o.Problems, fmt.Sprintf("the spend was not cancelled for a lost lease (accepted %v, error %v)", ok, spendErr))
		o.Story = "the spend was not cancelled"
	} else {
		f.Cause = cause.Error()
		o.Story = "the watchdog cancelled the spend before its write, cause: " + f.Cause
	}
	f.Unknown = unknown
	o.Figures = f
	o.Verdict, err = e.check(accepted, unknown)
	return o, err
}

// every is how often the watchdog refreshes, rounded for printing.
func every(ttl time.Duration) time.Duration {
	if d := ttl / 3; d < 10*time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return (ttl / 3).Round(time.Millisecond)
}
