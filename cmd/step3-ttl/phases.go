package main

// The three phases. Each starts from a fresh balance and a free lock key,
// so a phase run alone (-phase 2) tells the same story as in a full run.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	initial = 100 // starting balance of every phase
	amount  = 10  // each spend
)

// env is what the flags set, the client, and the run that owns the prefix.
type env struct {
	ttl, work time.Duration
	n         int
	prefix    string
	rdb       redis.UniversalClient
	run       *cli.Session
}

func (e env) balanceKey() string { return wallet.BalanceKey(e.prefix, wallet.DemoWallet) }
func (e env) lockKey() string    { return wallet.LockKey(e.prefix, wallet.DemoWallet) }

// wait bounds each spender's wait for the lock: long enough for every
// spender to get its turn, so it only stops a hang.
func (e env) wait() time.Duration { return time.Duration(e.n)*(e.work+e.ttl) + 5*time.Second }

// every is how often the watchdog refreshes, rounded for printing.
func (e env) every() time.Duration {
	d := e.ttl / 3
	if d < 10*time.Millisecond {
		return d.Round(time.Microsecond)
	}
	return d.Round(time.Millisecond)
}

// fresh restores the balance and frees the lock key.
func (e env) fresh(ctx context.Context) error {
	if err := e.rdb.Del(ctx, e.lockKey()).Err(); err != nil {
		return fmt.Errorf("free %s: %w", e.lockKey(), err)
	}
	return wallet.Set(ctx, e.rdb, e.balanceKey(), initial)
}

// outcome is one phase's result: its check line, what it saw, and what
// went wrong beyond the verdict.
type outcome struct {
	verdict  wallet.Verdict
	figures  figures
	setting  string // for the text: the phase's settings
	story    string // for the text: what happened, above the check line
	problems []string
}

// figures are what a phase saw, beside its check in the JSON.
type figures struct {
	NotHeld  int    `json:"releases_not_held"` // releases that found the lease gone
	Releases int    `json:"releases"`          // releases attempted
	Unknown  int    `json:"unknown_spends"`    // spends whose outcome is unknown (sent, no reply)
	Cause    string `json:"cause,omitempty"`   // phase 3: why the work was cancelled
}

type phase func(ctx context.Context, e env) (outcome, error)

// ran is what a phase returned, in one value for cli.Await.
type ran struct {
	outcome
	err error
}

func pick(name string) ([]phase, error) {
	all := map[string]phase{"1": noWatchdog, "2": watchdog, "3": takenOver}
	if name == "all" {
		return []phase{noWatchdog, watchdog, takenOver}, nil
	}
	if p, ok := all[name]; ok {
		return []phase{p}, nil
	}
	return nil, fmt.Errorf("unknown -phase %q (want 1, 2, 3 or all)", name)
}

// Phase 1: the work outlives the TTL and nothing extends the lease.
func noWatchdog(ctx context.Context, e env) (outcome, error) {
	o, err := crowd(ctx, e, false)
	o.setting = fmt.Sprintf("ttl %v, work %v, no watchdog", e.ttl, e.work)
	return o, err
}

// Phase 2: the same, with a watchdog refreshing the lease during the work.
func watchdog(ctx context.Context, e env) (outcome, error) {
	o, err := crowd(ctx, e, true)
	o.setting = fmt.Sprintf("ttl %v, work %v, watchdog every %v", e.ttl, e.work, e.every())
	if o.figures.NotHeld > 0 {
		o.problems = append(o.problems, fmt.Sprintf("%d releases found the lease gone: the watchdog did not keep it", o.figures.NotHeld))
	}
	return o, err
}

// crowd runs e.n spenders at once, each holding the lock for its spend.
func crowd(ctx context.Context, e env, watch bool) (outcome, error) {
	var o outcome
	if err := e.fresh(ctx); err != nil {
		return o, err
	}
	var mu sync.Mutex
	tally := wallet.Hammer(e.n, func(int) (bool, error) {
		actx, cancel := context.WithTimeout(ctx, e.wait())
		l, err := lock.Acquire(actx, e.rdb, e.lockKey(), e.ttl)
		cancel()
		if err != nil {
			return false, err
		}
		work, stop := ctx, context.CancelFunc(func() {})
		if watch {
			// Refreshes every ttl/3; cancels work if a refresh fails.
			work, stop = l.Watch(ctx)
		}
		ok, err := wallet.Spend(work, e.rdb, e.balanceKey(), amount, e.work)
		stop()
		rerr := l.Release(ctx)
		mu.Lock()
		defer mu.Unlock()
		o.figures.Releases++
		switch {
		case errors.Is(rerr, lock.ErrNotHeld):
			o.figures.NotHeld++ // the write above, if any, has landed all the same
		case rerr != nil:
			o.problems = append(o.problems, rerr.Error())
		}
		return ok, err
	})
	o.story = fmt.Sprintf("%d of %d releases found the lease gone and deleted nothing", o.figures.NotHeld, o.figures.Releases)
	err := e.check(&o, tally.Accepted, tally.Unknown)
	if line := cli.Outcomes(tally, e.n, o.verdict); line != "" {
		o.problems = append(o.problems, line)
	}
	return o, err
}

// Phase 3: the lease is lost while the work runs.
func takenOver(ctx context.Context, e env) (outcome, error) {
	o := outcome{figures: figures{Releases: 1}}
	o.setting = fmt.Sprintf("lease taken over %v into the work, watchdog every %v", e.work/3, e.every())
	if err := e.fresh(ctx); err != nil {
		return o, err
	}
	actx, cancel := context.WithTimeout(ctx, e.wait())
	l, err := lock.Acquire(actx, e.rdb, e.lockKey(), e.ttl)
	cancel()
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
			tookOver <- e.rdb.Set(tctx, e.lockKey(), "another-holder", e.ttl).Err()
		case <-work.Done():
			tookOver <- nil
		}
	}()
	ok, spendErr := wallet.Spend(work, e.rdb, e.balanceKey(), amount, e.work)
	cause := context.Cause(work)
	stop()
	if err := <-tookOver; err != nil {
		return o, err
	}
	switch rerr := l.Release(ctx); {
	case errors.Is(rerr, lock.ErrNotHeld):
		o.figures.NotHeld = 1 // and the other holder's key is left alone
	case rerr != nil:
		o.problems = append(o.problems, rerr.Error())
	default:
		o.problems = append(o.problems, "the release succeeded: the takeover did not happen")
	}
	accepted, unknown := 0, 0
	switch {
	case ok:
		accepted = 1
	case errors.Is(spendErr, wallet.ErrUnknownOutcome):
		unknown = 1
	}
	if !errors.Is(spendErr, lock.ErrNotHeld) {
		o.problems = append(o.problems, fmt.Sprintf("the spend was not cancelled for a lost lease (accepted %v, error %v)", ok, spendErr))
		o.story = "the spend was not cancelled"
	} else {
		o.figures.Cause = cause.Error()
		o.story = "the watchdog cancelled the spend before its write, cause: " + o.figures.Cause
	}
	return o, e.check(&o, accepted, unknown)
}

// check reads the balance, even after Ctrl-C, and fills in the phase's
// check line.
func (e env) check(o *outcome, accepted, unknown int) error {
	ctx, cancel := e.run.Cleanup()
	defer cancel()
	balance, err := wallet.Balance(ctx, e.rdb, e.balanceKey())
	if err != nil {
		return err
	}
	o.verdict = wallet.CheckUnknown(initial, amount, accepted, unknown, balance)
	o.figures.Unknown = unknown
	return nil
}
