// Step 5: fencing tokens, checked by PostgreSQL. A holder that pauses past
// its TTL wakes believing it still holds the lock, and writes; so the wallet
// lives in a PostgreSQL row, which refuses a write whose fence is older than
// the row's. Phases 1 and 1b are BROKEN, 2, 3 and 4 OK, on every run.
//
//	go run ./cmd/step5-fencing            # or -phase 1b -json
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/lab/internal/fencing"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/postgres"
)

const (
	step    = "step5-fencing"
	initial = 100 // starting balance of phases 1, 1b, 2 and 4
	amount  = 10  // every spend
)

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step5:", stdout, stderr).WithWallet()
	c := &config{}
	h.Flags.DurationVar(&c.TTL, "ttl", 200*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	h.Flags.DurationVar(&c.Pause, "pause", 400*time.Millisecond, "how long a stalled holder of phase 3 pauses between its read and its write; longer than -ttl, at most 1h")
	h.Flags.DurationVar(&c.Work, "work", 2*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	h.Flags.IntVar(&c.N, "n", 50, fmt.Sprintf("spenders in phases 3 and 4, at most %d", fencing.MaxSpenders))
	h.Flags.IntVar(&c.Stalls, "stalls", 5, "how many spenders of phase 3 stall past the TTL")
	h.Flags.StringVar(&c.Phase, "phase", "all", "which phase to run: 1, 1b, 2, 3, 4 or all")
	// Each phase on a fresh row; 1, 1b and 2 play the two holders below.
	phases := []fencing.Phase{
		// A plain lease and plain SQL: A's stale write lands on top of B's.
		{Name: "1", Run: c.play("1", lock.Acquire, balance, write)},
		// Fences checked on write only: a fence orders writes, and both land.
		{Name: "1b", Run: c.play("1b", lock.AcquireFenced, balance, (*postgres.Store).WriteFencedOnly)},
		// The read claims the row with its fence: A's stale write is refused.
		{Name: "2", Run: c.play("2", lock.AcquireFenced, (*postgres.Store).Claim, (*postgres.Store).WriteFenced)},
		// Fifty spenders through fencing.Fenced, a few stalling past the TTL.
		{Name: "3", Run: c.fencedSpenders},
		// No lock and no Redis: a version column.
		{Name: "4", Run: c.versionColumn, NoRedis: true},
	}
	return (*fencing.Flags)(c).Run(ctx, h, args, phases)
}

// holders is the story of phases 1, 1b and 2 in the order it happens: two
// holders of one lease, A and B, spend from one row; A pauses between its
// read and its write, its lease expiring meanwhile. In 1b (between) A wakes
// between B's read and B's write. play judges A's write (Story.AErr).
func holders(ctx context.Context, work time.Duration, between bool, m moves) (s fencing.Story, err error) {
	la, err := m.acquire(ctx) // A takes the lease
	if err != nil {
		return s, fmt.Errorf("holder A: %w", err)
	}
	defer la.Release(ctx)                                 // fails: A's lease expires while it pauses, which is the point
	if s.ReadA, err = m.read(ctx, la.Fence); err != nil { // A reads
		return s, fmt.Errorf("holder A: %w", err)
	}
	paused := time.Now()      // A pauses, and meanwhile
	lb, err := m.acquire(ctx) // B takes the lease (Acquire retries until A's has expired)
	if err != nil {
		return s, fmt.Errorf("holder B: %w", err)
	}
	defer lb.Release(ctx)
	if s.ReadB, err = m.read(ctx, lb.Fence); err != nil { // B reads what A read
		return s, fmt.Errorf("holder B: %w", err)
	}
	if err := wallet.Work(ctx, work); err != nil {
		return s, err
	}
	var bErr error
	if !between {
		bErr = m.write(ctx, lb.Fence, s.ReadB-amount) // B writes
	}
	s.PausedMS = float64(time.Since(paused).Microseconds()) / 1000 // A wakes
	s.AErr = m.write(ctx, la.Fence, s.ReadA-amount)                // A writes what it read, long stale
	if between {
		bErr = m.write(ctx, lb.Fence, s.ReadB-amount) // B writes last
	}
	if bErr != nil {
		return s, fmt.Errorf("holder B: %w", bErr)
	}
	s.FenceA, s.FenceB, s.AAccepted, s.BAccepted = la.Fence, lb.Fence, s.AErr == nil, true
	return s, nil
}
