// Step 3: work that outlives its lease, and the watchdog that keeps it.
//
// A lease expires on time whether or not its holder has finished. Three
// phases, each on a fresh balance of 100 and each with its check line:
//
//  1. The TTL (600ms) is shorter than the work (1.2s) and nothing extends
//     it. The key expires mid-work, the next spender takes it and reads a
//     balance the first is about to overwrite: updates are lost. Every late
//     Release finds the key gone or holding another token, and deletes
//     nothing (lock.ErrNotHeld). BROKEN.
//  2. The same TTL and work, with lock.Watch: a watchdog refreshes the
//     lease every TTL/3 while the work runs. OK.
//  3. Watch again, but a third into the work another client writes its
//     own token to the lock key, as if this holder had stalled past its TTL
//     and someone else had taken over. The next refresh fails, the watchdog
//     cancels the work's context, and the spend stops before its write:
//     nothing is written. OK.
//
// Expect (the balance of phase 1 varies; the verdicts never do):
//
//	phase 1: ttl 600ms, work 1.2s, no watchdog
//	  3 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=80 expected=70 BROKEN linearizable=no
//	phase 2: ttl 600ms, work 1.2s, watchdog every 200ms
//	  0 of 3 releases found the lease gone and deleted nothing
//	  accepted=3 balance=70 expected=70 OK linearizable=yes
//	phase 3: lease taken over 400ms into the work, watchdog every 200ms
//	  the watchdog cancelled the spend before its write, cause: lock: not held (its lease ran out, or another holder has the key)
//	  accepted=0 balance=100 expected=100 OK linearizable=yes
//
// Run it with:
//
//	go run ./cmd/step3-ttl
//	go run ./cmd/step3-ttl -phase 2
//	go run ./cmd/step3-ttl -ttl 3s   # the work fits in the TTL: phase 1 is OK, and the program says so
//
// It exits 0 when every phase gives the verdict the lesson promises
// (lesson.Phases), 1 when one does not or Redis fails, 2 on bad flags, 130
// after Ctrl-C, once it has printed what it measured and deleted its keys.
package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/wallet"
)

const (
	step    = "step3-ttl"
	initial = 100 // each phase's balance
	amount  = 10  // each spend
)

func main() { harness.Main(run) }

// The phases, in the lesson's order (phases.go).
func (e *env) phases() []harness.Phase {
	return []harness.Phase{
		{Name: "1", Run: e.noWatchdog}, // the work outlives the TTL and nothing extends the lease
		{Name: "2", Run: e.watchdog},   // the same, with lock.Watch refreshing the lease
		{Name: "3", Run: e.takenOver},  // the lease taken over mid-work: the watchdog cancels the spend
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	h := harness.New(step, wallet.DefaultPrefix+"step3:", stdout, stderr)
	var e env
	// Each refresh gets TTL/3 (200ms) to answer: a round trip on a busy
	// machine under -race can take over 100ms. The work is two TTLs, so
	// phase 1's lease always expires mid-work, and phase 2 stays near 3.6 s.
	h.Flags.DurationVar(&e.ttl, "ttl", 600*time.Millisecond, "lease TTL, at least 1ms and at most 1h")
	h.Flags.DurationVar(&e.work, "work", 1200*time.Millisecond, "time between the read and the write of a spend, at most 1h")
	h.Flags.IntVar(&e.n, "n", 3, fmt.Sprintf("spenders in phases 1 and 2 (phase 2 takes n x work), at most %d", harness.MaxN))
	only := h.Flags.String("phase", "all", "which phase to run: 1, 2, 3 or all")
	var chosen []harness.Phase
	if code, ok := h.Parse(args, nil, func() (errs []error) { chosen, errs = e.choose(*only); return errs }); !ok {
		return code
	}
	e.balanceKey, e.lockKey = wallet.BalanceKey(h.Prefix(), wallet.DemoWallet), wallet.LockKey(h.Prefix(), wallet.DemoWallet)
	// Each phase in turn on a fresh balance of 100, spends of 10, until
	// Ctrl-C: its three lines, its check against the lesson, the exit code.
	return h.Phases(ctx, []string{e.balanceKey, e.lockKey}, map[string]any{"ttl": e.ttl.String(), "work": e.work.String(), "n": e.n}, chosen)
}
