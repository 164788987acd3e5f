package main

// The three phases, each on a fresh balance and a free lock key (Reset).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// env is what the flags set, and the run's keys.
type env struct {
	ttl, work           time.Duration
	n                   int
	balanceKey, lockKey string
}

// choose picks the phases -phase names, and checks the flags.
func (e *env) choose(only string) ([]harness.Phase, []error) {
	chosen, err := harness.Choose("-phase", only, e.phases())
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

// acquire takes the lock, waiting long enough for every spender's turn.
func (e *env) acquire(ctx context.Context, r *harness.Run) (*lock.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(e.n)*(e.work+e.ttl)+5*time.Second)
	defer cancel()
	return lock.Acquire(ctx, r.Redis, e.lockKey, e.ttl)
}

// figures are what a phase saw, beside its check in the JSON.
type figures struct {
	NotHeld  int    `json:"releases_not_held"` // releases that found the lease gone
	Releases int    `json:"releases"`          // releases attempted
	Unknown  int    `json:"unknown_spends"`    // spends whose outcome is unknown (sent, no reply)
	Cause    string `json:"cause,omitempty"`   // phase 3: why the work was cancelled
}

// Phases 1 and 2: the work outlives the TTL; nothing extends the lease,
// then a watchdog refreshes it during the work.
func (e *env) noWatchdog(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return e.crowd(ctx, r, false, fmt.Sprintf("ttl %v, work %v, no watchdog", e.ttl, e.work))
}
func (e *env) watchdog(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return e.crowd(ctx, r, true, fmt.Sprintf("ttl %v, work %v, watchdog every %v", e.ttl, e.work, every(e.ttl)))
}

// crowd runs e.n spenders at once, each holding the lock for its spend.
func (e *env) crowd(ctx context.Context, r *harness.Run, watch bool, setting string) (harness.Outcome, error) {
	o, f := harness.Outcome{Setting: setting}, figures{}
	if err := r.Reset(ctx, e.balanceKey, initial, e.lockKey); err != nil {
		return o, err
	}
	var mu sync.Mutex
	spend := func(ctx context.Context) (bool, error) { // one spender; r.Spend records it
		l, err := e.acquire(ctx, r)
		if err != nil {
			return false, err
		}
		work, stop := ctx, context.CancelFunc(func() {})
		if watch {
			// Refreshes every ttl/3; cancels work if a refresh fails.
			work, stop = l.Watch(ctx)
		}
		ok, err := wallet.Spend(work, r.Redis, e.balanceKey, amount, e.work)
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
	tally := wallet.Hammer(e.n, func(i int) (bool, error) { return r.Spend(ctx, i, amount, spend) })
	o.Story = fmt.Sprintf("%d of %d releases found the lease gone and deleted nothing", f.NotHeld, f.Releases)
	f.Unknown, o.Figures = tally.Unknown, &f
	v, err := r.Check(e.balanceKey, initial, amount, tally.Accepted, tally.Unknown)
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
func (e *env) takenOver(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	o, f := harness.Outcome{Setting: fmt.Sprintf("lease taken over %v into the work, watchdog every %v", e.work/3, every(e.ttl))}, figures{Releases: 1}
	if err := r.Reset(ctx, e.balanceKey, initial, e.lockKey); err != nil {
		return o, err
	}
	l, err := e.acquire(ctx, r)
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
			tookOver <- r.Redis.Set(tctx, e.lockKey, "another-holder", e.ttl).Err()
		case <-work.Done():
			tookOver <- nil
		}
	}()
	ok, spendErr := r.Spend(work, 0, amount, func(ctx context.Context) (bool, error) {
		return wallet.Spend(ctx, r.Redis, e.balanceKey, amount, e.work)
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
	accepted, unknown := harness.Counted(ok, spendErr)
	if !errors.Is(spendErr, lock.ErrNotHeld) {
		o.Problems = append(o.Problems, fmt.Sprintf("the spend was not cancelled for a lost lease (accepted %v, error %v)", ok, spendErr))
		o.Story = "the spend was not cancelled"
	} else {
		f.Cause = cause.Error()
		o.Story = "the watchdog cancelled the spend before its write, cause: " + f.Cause
	}
	f.Unknown, o.Figures = unknown, &f
	o.Verdict, err = r.Check(e.balanceKey, initial, amount, accepted, unknown)
	return o, err
}

// every is how often the watchdog refreshes, rounded for printing.
func every(ttl time.Duration) time.Duration {
	if d := ttl / 3; d < 10*time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return (ttl / 3).Round(time.Millisecond)
}
