// Step 3: work that outlives its lease, and the watchdog that keeps it.
//
// Three phases on a fresh balance of 100 each: the work outlives its lease,
// the same under lock.Watch, the lease taken over mid-work. Each ends with
// its check line (phase 1's balance varies, the verdicts never do):
//
//	accepted=3 balance=80 expected=70 BROKEN linearizable=no
//	accepted=3 balance=70 expected=70 OK linearizable=yes
//	accepted=0 balance=100 expected=100 OK linearizable=yes
//
// Run it with:
//
//	go run ./cmd/step3-ttl
//	go run ./cmd/step3-ttl -phase 2
//	go run ./cmd/step3-ttl -ttl 3s   # the work fits in the TTL: phase 1 is OK, and the program says so
package main

import (
	"context"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

func main() { harness.Main(run) } // run (flags.go): the flags, then h.Phases

// The phases, in the lesson's order, each on a fresh balance (r.Reset).
func (e *env) phases() []harness.Phase {
	return []harness.Phase{
		{Name: "1", Run: e.noWatchdog}, // the work outlives the TTL and nothing extends the lease
		{Name: "2", Run: e.watchdog},   // the same, with lock.Watch refreshing the lease
		{Name: "3", Run: e.takenOver},  // the lease taken over mid-work: the watchdog cancels the spend
	}
}

// crowd is phases 1 and 2: e.n spenders, each holding the lock for its spend.
func (e *env) crowd(ctx context.Context, r *harness.Run, watch bool) (harness.Outcome, error) {
	if err := r.Reset(ctx, e.balanceKey, initial, e.lockKey); err != nil {
		return harness.Outcome{}, err
	}
	var f figures // what the releases found (report.go)
	spend := func(ctx context.Context) (bool, error) {
		l, err := e.acquire(ctx, r)
		if err != nil {
			return false, err
		}
		work, stop := ctx, context.CancelFunc(func() {})
		if watch {
			work, stop = l.Watch(ctx) // refreshes every ttl/3; cancels work if a refresh fails
		}
		ok, err := wallet.Spend(work, r.Redis, e.balanceKey, amount, e.work)
		stop()
		f.released(l.Release(ctx)) // lock.ErrNotHeld: the lease was gone, but the write above, if any, landed
		return ok, err
	}
	tally := wallet.Hammer(e.n, func(i int) (bool, error) { return r.Spend(ctx, i, amount, spend) })
	return e.judgeCrowd(r, tally, &f, watch)
}

// takenOver is phase 3: a third into the work another client writes its
// own token to the lock key, as if this holder had stalled past its TTL.
// The next refresh fails; the watchdog cancels the spend before its write.
func (e *env) takenOver(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	if err := r.Reset(ctx, e.balanceKey, initial, e.lockKey); err != nil {
		return harness.Outcome{}, err
	}
	l, err := e.acquire(ctx, r)
	if err != nil {
		return harness.Outcome{}, err
	}
	work, stop := l.Watch(ctx)
	// The other client: here the same connection pool stands in for it.
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
	// The release finds the other client's token and leaves it: lock.ErrNotHeld.
	return e.judgeTakeover(r, ok, spendErr, cause, <-tookOver, l.Release(ctx))
}

// acquire takes the lock, waiting long enough for every spender's turn.
func (e *env) acquire(ctx context.Context, r *harness.Run) (*lock.Lock, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(e.n)*(e.work+e.ttl)+5*time.Second)
	defer cancel()
	return lock.Acquire(ctx, r.Redis, e.lockKey, e.ttl)
}
