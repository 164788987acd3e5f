package harness

// Fencing, step 5's join of a lease with a fencing token from Redis
// (lock.AcquireFenced) and a wallet row in PostgreSQL that refuses writes
// from an older token (postgres.Store): Fenced, its Heal (which step 6's
// fenced strategy calls too), and Refusals, phase 3's count of what
// PostgreSQL refused. It lives here, beside the row program (rows.go),
// because lock knows nothing of wallets and wallet nothing of locks.
//
// What it adds to the two is the heal. Redis keeps the fence counter in
// memory; after a restart without persistence the counter starts again
// from 1, below the fences PostgreSQL has already accepted. That stays
// safe (PostgreSQL refuses every one of those low fences) but, left alone,
// it would refuse them until the counter had climbed back on its own. So
// when PostgreSQL refuses a fence, Fenced raises the counter to the fence
// PostgreSQL holds, and the next holder gets a fence above it.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/history"
)

// Fenced takes the lease on key with a fencing token, runs write with that
// token and gives the lease back. write must hand the fence to the
// database with every read and write (postgres.Store.Claim and WriteFenced
// do), so that PostgreSQL, not the lease, decides whether the write lands.
//
// When write fails with a *wallet.StaleFenceError, nothing was written. Fenced
// then raises the fence counter of key to the fence PostgreSQL holds
// (lock.RaiseFence: a no-op unless Redis lost the counter) before giving
// the lease back, so that the next holder's fence is above it, and returns
// the error as it is: it does not try again, the caller decides.
//
// Fenced runs no watchdog: a holder that outlives its lease is stopped by the
// fence, at the cost of its work. Its errors are those of
// lock.AcquireFenced, those of write, and, joined to a stale fence, the
// error of a heal that failed. Whether the release succeeds does not
// matter: a lease that already expired is what fencing is for, and one
// that could not be deleted expires after ttl.
func Fenced(ctx context.Context, rdb lock.Client, key string, ttl time.Duration, write func(ctx context.Context, fence int64) (bool, error)) (bool, error) {
	l, err := lock.AcquireFenced(ctx, rdb, key, ttl)
	if err != nil {
		return false, err
	}
	// Release runs even when ctx has ended; see lock.ReleaseTimeout.
	defer l.Release(ctx)

	ok, err := write(ctx, l.Fence)
	// Heal while still holding the lease (if it is still ours): the next
	// AcquireFenced then draws its fence after the raise.
	return ok, Heal(ctx, rdb, key, err)
}

// Heal looks at the error of a fenced write on the wallet that lock key
// guards. When it is a *wallet.StaleFenceError, Heal raises the key's fence
// counter to the fence PostgreSQL holds (a no-op unless Redis lost the
// counter). It returns err, joined with the raise's error if that failed.
func Heal(ctx context.Context, rdb lock.Client, key string, err error) error {
	var stale *wallet.StaleFenceError
	if !errors.As(err, &stale) {
		return err
	}
	if _, herr := lock.RaiseFence(ctx, rdb, key, stale.Highest); herr != nil {
		return fmt.Errorf("%w; and fencing could not heal the fence counter: %w", err, herr)
	}
	return err
}

// Refusals counts which of a crowd of fenced spends PostgreSQL refused,
// and why, as step 5's phase 3 prints them (its -json "figures").
type Refusals struct {
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

// CountRefusals sorts the spends of tally out: spender i drew fences[i], failed
// with errs[i] and stalled if stalled[i]. An error other than a stale fence
// or an unknown outcome is returned as it is, counted with the others.
//
// Fences grow with every lease, so a fence handed out twice means the
// counter went backwards: Redis lost it (a restart), and Fenced healed it from
// the highest fence PostgreSQL holds.
func CountRefusals(initial int64, tally wallet.Tally, fences []int64, errs []error, stalled []bool) (Refusals, error) {
	handedOut := map[int64]int{}
	for _, f := range fences {
		handedOut[f]++
	}
	r := Refusals{Spenders: len(fences), Initial: initial, RefusedFences: []int64{}, ShortOfFunds: tally.Refused, Unknown: tally.Unknown}
	for i, err := range errs {
		if stalled[i] {
			r.Stalled++
		}
		var stale *wallet.StaleFenceError
		switch {
		case err == nil, errors.Is(err, wallet.ErrUnknownOutcome):
			continue
		case !errors.As(err, &stale):
			return r, fmt.Errorf("%d of %d spends failed, first: %w", len(tally.Errors)-tally.Unknown, len(fences), err)
		}
		r.StaleRefused++
		r.RefusedFences = append(r.RefusedFences, stale.Fence)
		switch {
		case stalled[i]:
			r.StalledStale++
		case handedOut[stale.Fence] > 1:
			r.Backwards++
		}
	}
	slices.Sort(r.RefusedFences)
	return r, nil
}

// CountRefusals is the package's CountRefusals on the run's row, with
// the highest fence the row holds once every spender is done.
func (r *Run) CountRefusals(ctx context.Context, initial int64, tally wallet.Tally, fences []int64, errs []error, stalled []bool) (Refusals, error) {
	f, err := CountRefusals(initial, tally, fences, errs, stalled)
	if err == nil {
		f.HighestFence, err = r.Store.Fence(ctx, r.ID)
	}
	return f, err
}

// Lines says what was refused, and names every refusal that was not a
// stalled spender's.
func (r Refusals) Lines() []string {
	lines := []string{fmt.Sprintf("stale writes refused: %d, fences %v; highest fence %d", r.StaleRefused, r.RefusedFences, r.HighestFence)}
	if r.StalledStale < r.Stalled {
		lines = append(lines, fmt.Sprintf("stalled spenders that wrote anyway, safely (nobody claimed the row while they paused): %d", r.Stalled-r.StalledStale))
	}
	if r.Backwards > 0 {
		lines = append(lines, fmt.Sprintf("spenders refused because the fence counter went backwards (Redis lost it, as a restart does, and handed out fences again; the heal raised it to PostgreSQL's highest fence): %d", r.Backwards))
	}
	switch others := r.StaleRefused - r.StalledStale - r.Backwards; {
	case others > 0 && r.Backwards > 0:
		lines = append(lines, fmt.Sprintf("other spenders refused without a stall (their lease went with Redis's data, or a busy machine made them outlive it): %d", others))
	case others > 0:
		lines = append(lines, fmt.Sprintf("spenders refused without a stall (a busy machine, or -work near -ttl, made them outlive the lease): %d", others))
	}
	return lines
}

// Story is what happened to step 5's two holders of one lease, A and B,
// in phases 1, 1b and 2, as -json prints it.
type Story struct {
	FenceA    int64   `json:"fence_a"` // 0 without fencing
	FenceB    int64   `json:"fence_b"`
	ReadA     int64   `json:"read_a"`
	ReadB     int64   `json:"read_b"`
	AAccepted bool    `json:"a_write_accepted"`
	BAccepted bool    `json:"b_write_accepted"`
	Highest   int64   `json:"highest_fence"` // the row's fence once both wrote
	PausedMS  float64 `json:"a_paused_ms"`   // A's pause, from its read until it woke; its lease expired meanwhile
	Stale     string  `json:"stale_writer"`  // whose write came from an overtaken read
	AErr      error   `json:"-"`             // why A's write was refused, if it was
}

// Accepted is how many of the two writes landed: B's, and A's if accepted.
func (s Story) Accepted() int { return map[bool]int{true: 2, false: 1}[s.AAccepted] }

// Record adds A's and B's spends of amount to the phase's history h, each
// from call, before both, to now: the history then asks whether any order
// of the two explains what each read and whether its write landed.
func (s Story) Record(h *History, call, amount int64) {
	end, a := history.Now(), history.Accepted
	if !s.AAccepted {
		a = history.Outcome(false, s.AErr)
	}
	h.Add(history.Op{Client: 0, Call: call, Return: end, Amount: amount, Read: s.ReadA, Result: a})
	h.Add(history.Op{Client: 1, Call: call, Return: end, Amount: amount, Read: s.ReadB, Result: history.Accepted})
}

// Lines tell the story as it happened, one line per move; ttl is the
// lease's, amount each holder's spend.
func (s Story) Lines(phase string, ttl time.Duration, amount int64) []string {
	a, b := s.ReadA-amount, s.ReadB-amount // what A and B write
	paused := time.Duration(s.PausedMS * float64(time.Millisecond)).Round(time.Millisecond)
	switch phase {
	case "1":
		return []string{
			fmt.Sprintf("A: takes the lease, reads %d, pauses", s.ReadA),
			fmt.Sprintf("B: takes the lease once A's has expired (A paused %v, TTL %v), reads %d, writes %d", paused, ttl, s.ReadB, b),
			fmt.Sprintf("A: wakes, writes %d: accepted, and stale: A read %d before B's spend, so B's spend is lost", a, s.ReadA),
		}
	case "1b":
		return []string{
			fmt.Sprintf("A: takes the lease with fence %d, reads %d without claiming the row, pauses", s.FenceA, s.ReadA),
			fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), reads %d without claiming the row", s.FenceB, paused, s.ReadB),
			fmt.Sprintf("A: wakes, writes %d with fence %d: accepted, the row's fence was 0", a, s.FenceA),
			fmt.Sprintf("B: writes %d with fence %d: accepted, the row's fence was %d; B read %d before A's spend, so A's spend is lost", b, s.FenceB, s.FenceA, s.ReadB),
		}
	}
	said := fmt.Sprintf("refused, the row carries fence %d (B's): A's was the stale write", s.Highest)
	if s.AAccepted {
		said = "accepted, and stale: A read before B's spend"
	}
	return []string{
		fmt.Sprintf("A: takes the lease with fence %d, claims the row, reads %d, pauses", s.FenceA, s.ReadA),
		fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), claims the row, reads %d, writes %d", s.FenceB, paused, s.ReadB, b),
		fmt.Sprintf("A: wakes, writes %d with fence %d: %s", a, s.FenceA, said),
	}
}
