// Package timeline plays step 5's story of two holders of one lease on one
// wallet: A takes the lease and reads, then pauses past its TTL; B takes
// the lease once A's has expired and reads the same balance; both write.
// What differs from phase to phase is what a holder does (the Moves: which
// lease, which read, which write) and when A wakes (the Story).
//
// The order is set by channels, not by sleeps. The one wait that is a
// matter of time is B's acquire, which retries until A's lease has expired,
// and Redis keeps that time: so A's lease has expired before A writes on
// every run, however slow the machine, and the verdicts never vary.
package timeline

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// Story is which of step 5's timelines to play: when the paused holder A
// wakes, and how Figures.Lines and Figures.Stale tell what happened, which
// hold for the moves the story names (Unfenced: a plain lease, read and
// write; FencedOnWrite: wallet.Store.WriteFencedOnly after a plain read;
// ClaimedOnRead: Claim, then WriteFenced).
type Story int

const (
	// Unfenced: a plain lease. A wakes after B has read and written.
	Unfenced Story = iota
	// FencedOnWrite: fences, checked on write only. A wakes after B has
	// read and before B writes, so that both write from the same read.
	FencedOnWrite
	// ClaimedOnRead: fences, claimed on read. A wakes after B has read and
	// written, as in Unfenced.
	ClaimedOnRead
)

// Moves are what each holder does: take the lease, read the balance, write
// the balance less the amount. fence is the lease's (0 without fencing).
type Moves struct {
	Acquire func(ctx context.Context) (*lock.Lock, error)
	Read    func(ctx context.Context, fence int64) (int64, error)
	Write   func(ctx context.Context, fence, balance int64) error
}

// Figures are what happened to A and B, as step 5's -json prints them.
type Figures struct {
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

	story  Story
	amount int64
}

// Accepted is how many of the two writes landed.
func (f Figures) Accepted() int {
	if f.AAccepted && f.BAccepted {
		return 2
	}
	return 1
}

// Paused is A's pause, rounded to the millisecond.
func (f Figures) Paused() time.Duration {
	return time.Duration(f.PausedMS * float64(time.Millisecond)).Round(time.Millisecond)
}

// Play plays the story on wallet id, each holder spending amount with
// work between its read and its write, and reads the row's fence from
// store at the end. A's write may be refused for a stale fence
// (Figures.AErr, matching wallet.ErrStaleFence); any other error ends the
// timeline. A's release fails, its lease having expired while it paused:
// that is the point, so it is not reported.
func Play(ctx context.Context, store *wallet.Store, id int64, story Story, amount int64, work time.Duration, m Moves) (Figures, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // lets B go if A fails before it could
	f := Figures{Stale: "A", story: story, amount: amount}
	between := story == FencedOnWrite // A writes between B's read and B's write
	if between {
		f.Stale = "B"
	}
	aRead, bRead, aWrote, bDone := make(chan struct{}), make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		bDone <- func() error {
			if err := wait(ctx, aRead); err != nil {
				return err
			}
			lb, err := m.Acquire(ctx) // retries until A's lease expires
			if err != nil {
				return err
			}
			defer lb.Release(ctx)
			f.FenceB = lb.Fence
			if f.ReadB, err = m.Read(ctx, lb.Fence); err != nil {
				return err
			}
			close(bRead)
			if err := wallet.Work(ctx, work); err != nil {
				return err
			}
			if between {
				if err := wait(ctx, aWrote); err != nil {
					return err
				}
			}
			return m.Write(ctx, lb.Fence, f.ReadB-amount)
		}()
	}()

	la, err := m.Acquire(ctx)
	if err != nil {
		return f, fmt.Errorf("holder A: %w", err)
	}
	defer la.Release(ctx)
	f.FenceA = la.Fence
	if f.ReadA, err = m.Read(ctx, la.Fence); err != nil {
		return f, fmt.Errorf("holder A: %w", err)
	}
	pausedAt := time.Now()
	close(aRead)
	var bErr error
	if between {
		select { // A's pause: until B has read
		case <-bRead:
		case bErr = <-bDone:
		}
	} else {
		bErr = <-bDone // A's pause: until B has written
	}
	if bErr != nil {
		return f, fmt.Errorf("holder B: %w", bErr)
	}
	f.PausedMS = float64(time.Since(pausedAt).Microseconds()) / 1000
	f.AErr = m.Write(ctx, la.Fence, f.ReadA-amount)
	f.AAccepted = f.AErr == nil
	if f.AErr != nil && !errors.Is(f.AErr, wallet.ErrStaleFence) {
		return f, fmt.Errorf("holder A: %w", f.AErr)
	}
	close(aWrote)
	if between {
		if err := <-bDone; err != nil {
			return f, fmt.Errorf("holder B: %w", err)
		}
	}
	f.BAccepted = true // B's write failing is an error above
	f.Highest, err = store.Fence(ctx, id)
	return f, err
}

// wait waits for ch to close or ctx to end.
func wait(ctx context.Context, ch <-chan struct{}) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Lines tell the story as it happened, one line per move; ttl is the
// lease's.
func (f Figures) Lines(ttl time.Duration) []string {
	a, b := f.ReadA-f.amount, f.ReadB-f.amount // what A and B write
	switch f.story {
	case Unfenced:
		return []string{
			fmt.Sprintf("A: takes the lease, reads %d, pauses", f.ReadA),
			fmt.Sprintf("B: takes the lease once A's has expired (A paused %v, TTL %v), reads %d, writes %d", f.Paused(), ttl, f.ReadB, b),
			fmt.Sprintf("A: wakes, writes %d: accepted, and stale: A read %d before B's spend, so B's spend is lost", a, f.ReadA),
		}
	case FencedOnWrite:
		return []string{
			fmt.Sprintf("A: takes the lease with fence %d, reads %d without claiming the row, pauses", f.FenceA, f.ReadA),
			fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), reads %d without claiming the row", f.FenceB, f.Paused(), f.ReadB),
			fmt.Sprintf("A: wakes, writes %d with fence %d: accepted, the row's fence was 0", a, f.FenceA),
			fmt.Sprintf("B: writes %d with fence %d: accepted, the row's fence was %d; B read %d before A's spend, so A's spend is lost", b, f.FenceB, f.FenceA, f.ReadB),
		}
	}
	said := fmt.Sprintf("refused, the row carries fence %d (B's): A's was the stale write", f.Highest)
	if f.AAccepted {
		said = "accepted, and stale: A read before B's spend"
	}
	return []string{
		fmt.Sprintf("A: takes the lease with fence %d, claims the row, reads %d, pauses", f.FenceA, f.ReadA),
		fmt.Sprintf("B: takes the lease with fence %d once A's has expired (A paused %v), claims the row, reads %d, writes %d", f.FenceB, f.Paused(), f.ReadB, b),
		fmt.Sprintf("A: wakes, writes %d with fence %d: %s", a, f.FenceA, said),
	}
}
