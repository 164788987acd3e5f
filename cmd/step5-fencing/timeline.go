package main

// The story of phases 1, 1b and 2: two holders of one lease on one
// wallet. What differs from phase to phase is what a holder does (its
// moves: which lease, which read, which write) and, in phase 1b, when A
// wakes. The order is set by channels, not by sleeps. The one wait that is
// a matter of time is B's acquire, which retries until A's lease has
// expired, and Redis keeps that time: so A's lease has expired before A
// writes on every run, however slow the machine, and the verdicts never
// vary.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/history"
)

// moves are what each holder does: take the lease, read the balance, write
// the balance less the amount. fence is the lease's (0 without fencing).
type moves struct {
	acquire func(ctx context.Context) (*lock.Lock, error)
	read    func(ctx context.Context, fence int64) (int64, error)
	write   func(ctx context.Context, fence, balance int64) error
}

// story is what happened to A and B, as -json prints it.
type story struct {
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

// play plays the two holders on a fresh row and fence counter; in phase 1b
// A wakes between B's read and B's write.
func (c *config) play(ctx context.Context, r *harness.Run, phase string, m moves) (harness.Outcome, error) {
	if err := r.Fresh(ctx, initial); err != nil {
		return harness.Outcome{}, err
	}
	call := history.Now()
	s, err := holders(ctx, c.work, phase == "1b", m)
	s.record(r.History(), call)
	if err == nil {
		s.Highest, err = r.Store.Fence(ctx, r.ID)
	}
	if err != nil {
		return harness.Outcome{}, err
	}
	return r.Outcome(ctx, initial, amount, s.accepted(), 0, s, s.lines(phase, c.ttl)...)
}

// holders plays A and B, each spending amount with work between its read
// and its write. A's write may be refused for a stale fence (story.AErr);
// any other error ends the story. A's release fails, its lease having
// expired while it paused: that is the point, so it is not reported.
func holders(ctx context.Context, work time.Duration, between bool, m moves) (s story, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // lets B go if A fails
	if s.Stale = "A"; between {
		s.Stale = "B"
	}
	la, err := m.acquire(ctx) // A takes the lease,
	if err != nil {
		return s, fmt.Errorf("holder A: %w", err)
	}
	defer la.Release(ctx)
	s.FenceA = la.Fence
	if s.ReadA, err = m.read(ctx, la.Fence); err != nil { // reads,
		return s, fmt.Errorf("holder A: %w", err)
	}
	paused, wakeA, aWrote, bDone := time.Now(), make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() { // and pauses, as in a long GC, while B
		bDone <- func() error {
			lb, err := m.acquire(ctx) // takes the lease (Acquire retries until A's has expired),
			if err != nil {
				return err
			}
			defer lb.Release(ctx)
			s.FenceB = lb.Fence
			if s.ReadB, err = m.read(ctx, lb.Fence); err != nil { // reads the balance A read,
				return err
			}
			if err := wallet.Work(ctx, work); err != nil {
				return err
			}
			if between { // (in phase 1b, A wakes now and writes first)
				close(wakeA)
				select {
				case <-aWrote:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			return m.write(ctx, lb.Fence, s.ReadB-amount) // and writes.
		}()
	}()
	var bErr error
	select { // A wakes once B has written,
	case <-wakeA:
	case bErr = <-bDone:
	}
	if bErr != nil {
		return s, fmt.Errorf("holder B: %w", bErr)
	}
	s.PausedMS = float64(time.Since(paused).Microseconds()) / 1000
	s.AErr = m.write(ctx, la.Fence, s.ReadA-amount) // and writes what it read, long stale.
	if s.AAccepted = s.AErr == nil; s.AErr != nil && !errors.Is(s.AErr, wallet.ErrStaleFence) {
		return s, fmt.Errorf("holder A: %w", s.AErr)
	}
	close(aWrote)
	if between { // B writes last
		if err := <-bDone; err != nil {
			return s, fmt.Errorf("holder B: %w", err)
		}
	}
	s.BAccepted = true // B's write failing is an error above
	return s, nil
}

// record adds A's and B's spends to the phase's history, each from call,
// before both, to now: the history then asks whether any order of the two
// explains what each read and whether its write landed.
func (s story) record(h *harness.History, call int64) {
	end, a := history.Now(), history.Accepted
	if !s.AAccepted {
		a = history.Outcome(false, s.AErr)
	}
	h.Add(history.Op{Client: 0, Call: call, Return: end, Amount: amount, Read: s.ReadA, Result: a})
	h.Add(history.Op{Client: 1, Call: call, Return: end, Amount: amount, Read: s.ReadB, Result: history.Accepted})
}

// accepted is how many of the two writes landed: B's, and A's if accepted.
func (s story) accepted() int { return map[bool]int{true: 2, false: 1}[s.AAccepted] }

// lines tell the story as it happened, one line per move; ttl is the lease's.
func (s story) lines(phase string, ttl time.Duration) []string {
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
