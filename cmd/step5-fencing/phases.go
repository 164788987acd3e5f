package main

// The four phases. Each starts from a fresh wallet row and a fresh fence
// counter, so a phase run alone (-phase 2) tells the same story as in a
// full run, and each returns its check line, what it saw, and the figures
// for -json.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"example.com/walletlock/internal/fencing"
	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	initial = 100 // starting balance of phases 1, 2 and 4
	amount  = 10  // every spend
)

type phase struct {
	name  string
	redis bool // whether it needs Redis
	run   func(ctx context.Context, e *env) (outcome, error)
}

var phases = []phase{
	{"1", true, pausedNoFencing},
	{"2", true, pausedFenced},
	{"3", true, fencedCrowd},
	{"4", false, versioned},
}

// Phase 1. A plain lease, and SQL that writes whatever it is given.
func pausedNoFencing(ctx context.Context, e *env) (outcome, error) {
	t, err := pausedHolder(ctx, e, moves{
		acquire: func(ctx context.Context) (*lock.Lock, error) { return lock.Acquire(ctx, e.rdb, e.lockKey(), e.ttl) },
		read:    func(ctx context.Context, _ int64) (int64, error) { return e.store.Balance(ctx, e.id) },
		write:   func(ctx context.Context, _, bal int64) error { return e.store.Write(ctx, e.id, bal) },
	})
	if err != nil {
		return outcome{}, err
	}
	if !t.AAccepted {
		return outcome{}, fmt.Errorf("holder A's unguarded write failed: %w", t.aErr)
	}
	return e.outcome(ctx, "1", initial, 2, 0, t,
		fmt.Sprintf("A: takes the lease, reads %d, pauses", t.ReadA),
		fmt.Sprintf("B: takes the lease once A's has expired (A paused %v, TTL %v), reads %d, writes %d", t.paused(), e.ttl, t.ReadB, t.ReadB-amount),
		fmt.Sprintf("A: wakes, writes %d: accepted, and stale: A read %d before B's spend, so B's spend is lost", t.ReadA-amount, t.ReadA))
}

// Phase 2. The same timeline; the lease now comes with a fence, the read
// claims the row with it (Claim), and the write lands only while the row
// still carries it (WriteFenced).
func pausedFenced(ctx context.Context, e *env) (outcome, error) {
	t, err := pausedHolder(ctx, e, moves{
		acquire: func(ctx context.Context) (*lock.Lock, error) {
			return lock.AcquireFenced(ctx, e.rdb, e.lockKey(), e.ttl)
		},
		read:  func(ctx context.Context, fence int64) (int64, error) { return e.store.Claim(ctx, e.id, fence) },
		write: func(ctx context.Context, fence, bal int64) error { return e.store.WriteFenced(ctx, e.id, fence, bal) },
	})
	if err != nil {
		return outcome{}, err
	}
	accepted, verdict := 1, fmt.Sprintf("refused, the row carries fence %d (B's): A's was the stale write", t.Highest)
	var stale *wallet.StaleFenceError
	switch {
	case t.AAccepted:
		accepted, verdict = 2, "accepted, and stale: A read before B's spend"
	case !errors.As(t.aErr, &stale):
		return outcome{}, fmt.Errorf("holder A's fenced write failed: %w", t.aErr)
	}
	return e.outcome(ctx, "2", initial, accepted, 0, t,
		fmt.Sprintf("A: takes the lease with fence %d, claims the row, reads %d, pauses", t.FenceA, t.ReadA),
		fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), claims the row, reads %d, writes %d", t.FenceB, t.paused(), t.ReadB, t.ReadB-amount),
		fmt.Sprintf("A: wakes, writes %d with fence %d: %s", t.ReadA-amount, t.FenceA, verdict))
}

// moves are what a holder does in phases 1 and 2: take the lease, read,
// write. Phase 1 passes the fence to nobody.
type moves struct {
	acquire func(ctx context.Context) (*lock.Lock, error)
	read    func(ctx context.Context, fence int64) (int64, error)
	write   func(ctx context.Context, fence, balance int64) error
}

// timeline is what happened to A and B.
type timeline struct {
	FenceA    int64   `json:"fence_a"` // 0 in phase 1: no fences
	FenceB    int64   `json:"fence_b"`
	ReadA     int64   `json:"read_a"`
	ReadB     int64   `json:"read_b"`
	AAccepted bool    `json:"a_write_accepted"` // B's write is always accepted
	Highest   int64   `json:"highest_fence"`    // the row's fence when A wrote
	PausedMS  float64 `json:"a_paused_ms"`      // A's pause, which outlasted its TTL
	Stale     string  `json:"stale_writer"`     // whose write came from an overtaken read: "A"
	aErr      error
}

func (t timeline) paused() time.Duration {
	return time.Duration(t.PausedMS * float64(time.Millisecond)).Round(time.Millisecond)
}

// pausedHolder plays the timeline of phases 1 and 2. The order is set by
// channels, not by sleeps: A reads, then lets B go; B's acquire waits
// until A's lease has expired (the only wait that is a matter of time, and
// Redis keeps that time); A resumes only after B has written. So A's
// pause outlasts its TTL on every run, however slow the machine.
func pausedHolder(ctx context.Context, e *env, m moves) (timeline, error) {
	if err := e.fresh(ctx, initial); err != nil {
		return timeline{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // lets B go if A fails before it could
	t := timeline{Stale: "A"}
	aRead, bDone := make(chan struct{}), make(chan error, 1)
	go func() {
		bDone <- func() error {
			select {
			case <-aRead:
			case <-ctx.Done():
				return ctx.Err()
			}
			lb, err := m.acquire(ctx) // retries until A's lease expires
			if err != nil {
				return err
			}
			defer lb.Release(ctx)
			t.FenceB = lb.Fence
			if t.ReadB, err = m.read(ctx, lb.Fence); err != nil {
				return err
			}
			if err := wallet.Work(ctx, e.work); err != nil {
				return err
			}
			return m.write(ctx, lb.Fence, t.ReadB-amount)
		}()
	}()

	la, err := m.acquire(ctx)
	if err != nil {
		return t, fmt.Errorf("holder A: %w", err)
	}
	// A's release fails: its lease expired while it paused. That is the
	// point of the phase, so the error is not reported.
	defer la.Release(ctx)
	t.FenceA = la.Fence
	if t.ReadA, err = m.read(ctx, la.Fence); err != nil {
		return t, fmt.Errorf("holder A: %w", err)
	}
	pausedAt := time.Now()
	close(aRead)
	if err := <-bDone; err != nil { // A's pause: until B has written
		return t, fmt.Errorf("holder B: %w", err)
	}
	t.PausedMS = ms(time.Since(pausedAt))
	t.aErr = m.write(ctx, la.Fence, t.ReadA-amount)
	t.AAccepted = t.aErr == nil
	if t.Highest, err = e.store.Fence(ctx, e.id); err != nil {
		return t, err
	}
	return t, nil
}

// crowd is what phase 3 counted.
type crowd struct {
	Spenders      int     `json:"spenders"`
	Initial       int64   `json:"initial"`
	Stalled       int     `json:"stalled"`
	StaleRefused  int     `json:"stale_refused"`  // spends PostgreSQL refused for an old fence
	StalledStale  int     `json:"stalled_stale"`  // of which stalled spenders
	RefusedFences []int64 `json:"refused_fences"` // their fences
	HighestFence  int64   `json:"highest_fence"`
	ShortOfFunds  int     `json:"short_of_funds"`
	Backwards     int     `json:"counter_reset_refused"` // refused with a fence handed out twice: Redis lost the counter
	Unknown       int     `json:"unknown"`               // spends whose outcome is unknown
	Landed        int     `json:"landed"`                // how many of them the balance says landed; -1 if none fits
}

// Phase 3. Every spender goes through fencing.Do; a few, chosen at random,
// pause past the TTL between their read and their write. The wallet holds
// enough for everyone, so that every stalled spender has money to spend
// and therefore a write to be refused.
func fencedCrowd(ctx context.Context, e *env) (outcome, error) {
	start := int64(e.n) * amount
	if err := e.fresh(ctx, start); err != nil {
		return outcome{}, err
	}
	stalls := make([]bool, e.n)
	for _, i := range rand.Perm(e.n)[:e.stalls] {
		stalls[i] = true
	}
	fences := make([]int64, e.n) // spender i's fence
	errs := make([]error, e.n)   // and its error
	tally := wallet.Hammer(e.n, func(i int) (bool, error) {
		ok, err := fencing.Do(ctx, e.rdb, e.lockKey(), e.ttl, func(ctx context.Context, fence int64) (bool, error) {
			fences[i] = fence
			if stalls[i] {
				return e.stalledSpend(ctx, fence)
			}
			return e.store.SpendFenced(ctx, e.id, fence, amount, e.work)
		})
		errs[i] = err
		return ok, err
	})
	// Fences grow with every lease, so a fence handed out twice means the
	// counter went backwards: Redis lost it (a restart), and fencing.Do
	// healed it from the highest fence PostgreSQL holds.
	handedOut := map[int64]int{}
	for _, f := range fences {
		handedOut[f]++
	}
	c := crowd{Spenders: e.n, Initial: start, Stalled: e.stalls, RefusedFences: []int64{}, ShortOfFunds: tally.Refused, Unknown: tally.Unknown}
	for i, err := range errs {
		var stale *wallet.StaleFenceError
		switch {
		case err == nil, errors.Is(err, wallet.ErrUnknownOutcome):
			continue
		case !errors.As(err, &stale):
			return outcome{}, fmt.Errorf("%d of %d spends failed, first: %w", len(tally.Errors)-tally.Unknown, e.n, err)
		}
		c.StaleRefused++
		c.RefusedFences = append(c.RefusedFences, stale.Fence)
		switch {
		case stalls[i]:
			c.StalledStale++
		case handedOut[stale.Fence] > 1:
			c.Backwards++
		}
	}
	slices.Sort(c.RefusedFences)
	var err error
	if c.HighestFence, err = e.store.Fence(ctx, e.id); err != nil {
		return outcome{}, err
	}
	lines := []string{
		fmt.Sprintf("%d spenders take %d each from %d; stalled for %v between read and write (TTL %v): %d", e.n, amount, start, e.pause, e.ttl, e.stalls),
		fmt.Sprintf("stale writes refused: %d, fences %v; highest fence %d", c.StaleRefused, c.RefusedFences, c.HighestFence),
	}
	if c.StalledStale < e.stalls {
		lines = append(lines, fmt.Sprintf("stalled spenders that wrote anyway, safely (nobody claimed the row while they paused): %d", e.stalls-c.StalledStale))
	}
	if c.Backwards > 0 {
		lines = append(lines, fmt.Sprintf("spenders refused because the fence counter went backwards (Redis lost it, as a restart does, and handed out fences again); fencing.Do healed it from PostgreSQL's highest fence: %d", c.Backwards))
	}
	switch others := c.StaleRefused - c.StalledStale - c.Backwards; {
	case others > 0 && c.Backwards > 0:
		lines = append(lines, fmt.Sprintf("other spenders refused without a stall (their lease went with Redis's data, or a busy machine made them outlive it): %d", others))
	case others > 0:
		lines = append(lines, fmt.Sprintf("spenders refused without a stall (a busy machine, or -work near -ttl, made them outlive the lease): %d", others))
	}
	o, err := e.outcome(ctx, "3", start, tally.Accepted, tally.Unknown, &c, lines...)
	c.Landed = o.landed
	return o, err
}

// stalledSpend is SpendFenced with a pause between the read and the write
// that outlasts the lease, as a GC pause would: nothing tells the holder
// its lease is gone, and it writes when it wakes.
func (e *env) stalledSpend(ctx context.Context, fence int64) (bool, error) {
	bal, err := e.store.Claim(ctx, e.id, fence)
	if err != nil || bal < amount {
		return false, err
	}
	if err := wallet.Work(ctx, e.pause); err != nil {
		return false, err
	}
	if err := e.store.WriteFenced(ctx, e.id, fence, bal-amount); err != nil {
		return false, err
	}
	return true, nil
}

// versions is what phase 4 counted.
type versions struct {
	Spenders  int   `json:"spenders"`
	Conflicts int64 `json:"conflicts"` // writes that found the version changed, and read again
	Unknown   int   `json:"unknown"`   // spends whose outcome is unknown
	Landed    int   `json:"landed"`    // how many of them the balance says landed; -1 if none fits
}

// Phase 4. No lock and no Redis: each spender reads the balance and the
// row's version, and its UPDATE lands only if the version is unchanged;
// otherwise it reads again. For teams that own the database, this is all
// the correctness the wallet needs.
func versioned(ctx context.Context, e *env) (outcome, error) {
	if err := e.fresh(ctx, initial); err != nil {
		return outcome{}, err
	}
	var conflicts atomic.Int64
	tally := wallet.Hammer(e.n, func(int) (bool, error) {
		ok, n, err := e.store.SpendVersioned(ctx, e.id, amount, e.work)
		conflicts.Add(int64(n))
		return ok, err
	})
	for _, err := range tally.Errors {
		if !errors.Is(err, wallet.ErrUnknownOutcome) {
			return outcome{}, fmt.Errorf("%d of %d spends failed, first: %w", len(tally.Errors)-tally.Unknown, e.n, err)
		}
	}
	v := versions{Spenders: e.n, Conflicts: conflicts.Load(), Unknown: tally.Unknown}
	o, err := e.outcome(ctx, "4", initial, tally.Accepted, tally.Unknown, &v,
		fmt.Sprintf("%d spenders take %d each from %d, no lock: UPDATE ... WHERE version = the version read", e.n, amount, initial),
		fmt.Sprintf("version conflicts: %d, each one a spend that read again and retried", v.Conflicts))
	v.Landed = o.landed
	return o, err
}

// outcome reads the balance and checks it against the accepted spends and
// those whose outcome is unknown (wallet.CheckUnknown), saying how many of
// the unknown ones landed.
func (e *env) outcome(ctx context.Context, name string, start int64, accepted, unknown int, figures any, lines ...string) (outcome, error) {
	bal, err := e.store.Balance(ctx, e.id)
	if err != nil {
		return outcome{}, err
	}
	v := wallet.CheckUnknown(start, amount, accepted, unknown, bal)
	if unknown > 0 && v.Landed >= 0 {
		lines = append(lines, fmt.Sprintf("spends with an unknown outcome (sent, no reply): %d, of which the balance says %d landed", unknown, v.Landed))
	}
	return outcome{Result: lesson.NewResult(step, name, v.String(), v.OK), Figures: figures, lines: lines, landed: v.Landed}, nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
