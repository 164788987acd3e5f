// Step 5: fencing tokens, checked by PostgreSQL.
//
// No lease can tell its holder that it has expired. A holder that pauses
// past its TTL (a long GC, a frozen VM) wakes up, still believes it holds
// the lock, and writes. So the wallet now lives in a PostgreSQL row, and
// the database has the last word; Redis keeps the lease and a counter that
// gives every holder a fence, a number above every fence before it. Five
// phases, each with its check line: 1, a plain lease (BROKEN); 1b, fences
// checked on write only (BROKEN: a fence orders writes, it does not make a
// read fresh); 2, fences claimed on read (OK); 3, fifty spenders through
// fencing.Do, a few stalling past the TTL (OK); 4, no Redis, a version
// column (OK). Expect these verdicts on every run (fences and pauses vary):
//
//	phase 1b: the fence checked on write only: two writes computed from one read both land
//	  A: takes the lease with fence 1, reads 100 without claiming the row, pauses
//	  B: takes the lease with fence 2 once A's has expired (A paused 208ms), reads 100 without claiming the row
//	  A: wakes, writes 90 with fence 1: accepted, the row's fence was 0
//	  B: writes 90 with fence 2: accepted, the row's fence was 1; B read 100 before A's spend, so A's spend is lost
//	  accepted=2 balance=90 expected=80 BROKEN
//
// Run it with `go run ./cmd/step5-fencing` or `go run ./cmd/step5-fencing -phase 1b -json`.
// It exits 0 when every phase gave the verdict the lesson promises, 1 when
// one did not or a service failed, 2 on bad flags, and 130 after Ctrl-C,
// once it has deleted its wallet row and keys. The row is the prefix's own.
package main

import (
	"context"
	"io"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

const (
	step          = "step5-fencing"
	defaultPrefix = wallet.DefaultPrefix + "step5:"
	initial       = 100 // starting balance of phases 1, 1b, 2 and 4
	amount        = 10  // every spend
)

func main() { harness.Main(run) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, defaultPrefix, stdout, stderr).WithWallet()
	c := flags(h)
	phases := []harness.Phase{ // in the lesson's order, each on a fresh row and fence counter
		{Name: "1", Run: c.pausedHolder},       // a plain lease: the paused holder's write lands
		{Name: "1b", Run: c.fenceOnWriteOnly},  // fences checked on write only: both writes land
		{Name: "2", Run: c.fenceClaimedOnRead}, // fences claimed on read: the stale write is refused
		{Name: "3", Run: c.fencedSpenders},     // fifty spenders through fencing.Do, a few stalling
		{Name: "4", Run: c.versionColumn},      // no lock and no Redis: a version column
	}
	var chosen []harness.Phase
	if code, ok := h.Parse(args, nil, func() (errs []error) { chosen, errs = c.check(h.WalletID(), phases); return errs }); !ok {
		return code
	}
	return h.Rows(ctx, c.row(chosen), map[string]any{"config": c.report(h)}, chosen)
}

// Phase 1. A plain lease, and SQL that writes whatever it is given: A's
// stale write lands on top of B's (timeline.go).
func (c *config) pausedHolder(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return c.play(ctx, r, "1", moves{
		acquire: func(ctx context.Context) (*lock.Lock, error) { return lock.Acquire(ctx, r.Redis, r.LockKey, c.ttl) },
		read:    func(ctx context.Context, _ int64) (int64, error) { return r.Store.Balance(ctx, r.ID) },
		write:   func(ctx context.Context, _, bal int64) error { return r.Store.Write(ctx, r.ID, bal) },
	})
}

// Phase 1b. Fences, checked on write only: the reads claim nothing, and a
// write lands when its fence is above the row's (WriteFencedOnly). A wakes
// after B's read and before B's write, and both writes land.
func (c *config) fenceOnWriteOnly(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return c.play(ctx, r, "1b", moves{
		acquire: func(ctx context.Context) (*lock.Lock, error) {
			return lock.AcquireFenced(ctx, r.Redis, r.LockKey, c.ttl)
		},
		read: func(ctx context.Context, _ int64) (int64, error) { return r.Store.Balance(ctx, r.ID) },
		write: func(ctx context.Context, fence, bal int64) error {
			return r.Store.WriteFencedOnly(ctx, r.ID, fence, bal)
		},
	})
}

// Phase 2. Phase 1's timeline, fenced and claimed on read: the read stamps
// the row with the reader's fence (Claim), and the write lands only while
// the row still carries it (WriteFenced). A's stale write is refused.
func (c *config) fenceClaimedOnRead(ctx context.Context, r *harness.Run) (harness.Outcome, error) {
	return c.play(ctx, r, "2", moves{
		acquire: func(ctx context.Context) (*lock.Lock, error) {
			return lock.AcquireFenced(ctx, r.Redis, r.LockKey, c.ttl)
		},
		read:  func(ctx context.Context, fence int64) (int64, error) { return r.Store.Claim(ctx, r.ID, fence) },
		write: func(ctx context.Context, fence, bal int64) error { return r.Store.WriteFenced(ctx, r.ID, fence, bal) },
	})
}
