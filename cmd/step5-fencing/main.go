// Step 5: fencing tokens, checked by PostgreSQL.
//
// No lease can tell its holder that it has expired: a holder that pauses
// past its TTL (a long GC, a frozen VM) wakes, still believes it holds the
// lock, and writes. So the wallet now lives in a PostgreSQL row, which has
// the last word; Redis keeps the lease and a counter that gives every
// holder a fence above every fence before it. Five phases: 1, a plain
// lease (BROKEN); 1b, fences checked on write only (BROKEN: a fence orders
// writes, it does not make a read fresh); 2, fences claimed on read (OK);
// 3, fifty spenders through fencing.Fenced, a few stalling past the TTL
// (OK); 4, no Redis, a version column (OK). These verdicts never vary
// (fences and pauses do):
//
//	phase 1b: the fence checked on write only: two writes computed from one read both land
//	  A: takes the lease with fence 1, reads 100 without claiming the row, pauses
//	  B: takes the lease with fence 2 once A's has expired (A paused 208ms), reads 100 without claiming the row
//	  A: wakes, writes 90 with fence 1: accepted, the row's fence was 0
//	  B: writes 90 with fence 2: accepted, the row's fence was 1; B read 100 before A's spend, so A's spend is lost
//	  accepted=2 balance=90 expected=80 BROKEN linearizable=no
//
// Run it with `go run ./cmd/step5-fencing` or `go run ./cmd/step5-fencing -phase 1b -json`.
// It exits 0 when every phase gives the verdict the lesson promises, 1 when
// one does not or a service fails, 2 on bad flags, 130 after Ctrl-C, once
// it has deleted its wallet row (the prefix's own) and keys.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/fencing"
	"example.com/walletlock/internal/harness"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
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
	c := &config{}
	h.Flags.DurationVar(&c.TTL, "ttl", 200*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	h.Flags.DurationVar(&c.Pause, "pause", 400*time.Millisecond, "how long a stalled holder of phase 3 pauses between its read and its write; longer than -ttl, at most 1h")
	h.Flags.DurationVar(&c.Work, "work", 2*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	h.Flags.IntVar(&c.N, "n", 50, fmt.Sprintf("spenders in phases 3 and 4, at most %d", fencing.MaxSpenders))
	h.Flags.IntVar(&c.Stalls, "stalls", 5, "how many spenders of phase 3 stall past the TTL")
	h.Flags.StringVar(&c.Phase, "phase", "all", "which phase to run: 1, 1b, 2, 3, 4 or all")
	// The phases in the lesson's order, each on a fresh row and fence
	// counter. 1, 1b and 2 play two holders of one lease (phases.go) with
	// the moves given: which lease, which read, which write.
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
	f := (*fencing.Flags)(c)
	var chosen []fencing.Phase
	if code, ok := h.Parse(args, nil, func() (errs []error) { chosen, errs = f.Check(h.WalletID(), phases); return errs }); !ok {
		return code
	}
	return fencing.Rows(ctx, h, f.Row(chosen), f.Settings(h), chosen)
}

// A plain read and a plain write, which know no fence.
func balance(s *postgres.Store, ctx context.Context, id, _ int64) (int64, error) {
	return s.Balance(ctx, id)
}
func write(s *postgres.Store, ctx context.Context, id, _, bal int64) error {
	return s.Write(ctx, id, bal)
}
