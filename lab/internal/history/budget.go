package history

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/anishathalye/porcupine"
)

// Why a budget stopped a search.
const (
	running int32 = iota
	outOfTime
	outOfMemory
	interrupted
)

// stepBytes is what porcupine may keep for one step of its search beside
// the set of operations taken (a bitset, counted apart) and the balances
// the wallet may hold (stateBytes each). Each is counted twice over, for
// the garbage the step leaves until the next collection: measured against
// peak RSS, what a budget charges is an upper bound.
const (
	stepBytes  = 2 * 256
	stateBytes = 2 * 64
)

// budget bounds the searches of one check, or of one page: a deadline for
// all of them, the memory each may hold, and the caller's ctx. porcupine
// cannot be bounded in memory from outside, nor hear a signal, so the
// search steps through a model that asks the budget first (step): once it
// is spent, no step succeeds and the search unwinds.
type budget struct {
	ctx      context.Context
	lim      Limits
	deadline time.Time
	done     int             // operations of the searches that ended, for "after ordering N of M"
	model    porcupine.Model // Model, stepping through this budget

	perStep atomic.Int64 // bytes a successful step may add to what the search keeps
	used    atomic.Int64 // bytes charged to this search
	steps   atomic.Int64
	deepest atomic.Int32 // the most operations an order reached in this search
	why     atomic.Int32 // running, or why it stopped
}

func newBudget(ctx context.Context, lim Limits, start time.Time) *budget {
	b := &budget{ctx: ctx, lim: lim, deadline: start.Add(lim.Timeout)}
	b.model = model(b)
	return b
}

// step says whether the search may take one more step. It looks at the
// clock and at ctx every 16 steps: a step takes a fraction of a
// microsecond, or more when the wallet may hold many balances.
func (b *budget) step() bool {
	if b.why.Load() != running {
		return false
	}
	if b.steps.Add(1)%16 == 0 {
		switch {
		case b.ctx.Err() != nil:
			b.stop(interrupted)
		case time.Now().After(b.deadline):
			b.stop(outOfTime)
		}
	}
	return b.why.Load() == running
}

// took charges a step that succeeded, whose order has taken ordered
// operations, and after which the wallet may hold any of states balances.
func (b *budget) took(ordered int32, states int) {
	for d := b.deepest.Load(); ordered > d && !b.deepest.CompareAndSwap(d, ordered); d = b.deepest.Load() {
	}
	if b.used.Add(b.perStep.Load()+int64(states)*stateBytes) > b.lim.Memory {
		b.stop(outOfMemory)
	}
}

func (b *budget) stop(why int32) { b.why.CompareAndSwap(running, why) }

// spent says whether no search can run any more: the time is up, or ctx
// ended. A search that ran out of memory leaves the next one its own.
func (b *budget) spent() bool {
	why := b.why.Load()
	return why == outOfTime || why == interrupted
}

// search runs porcupine on ops within the budget: non-verbose for a
// verdict, verbose for a page's drawing. A search that the budget stopped
// returns what porcupine returned, which the caller must not believe:
// stopped says why.
func (b *budget) search(ops []porcupine.Operation, verbose bool) (porcupine.CheckResult, porcupine.LinearizationInfo) {
	if b.why.Load() == outOfMemory {
		b.why.Store(running) // a new search, with memory of its own
	}
	b.used.Store(0)
	b.deepest.Store(0)
	largest := 0
	for _, p := range partition(ops) {
		largest = max(largest, len(p))
	}
	b.perStep.Store(2*int64((largest+63)/64*8+24) + stepBytes)
	left := time.Until(b.deadline)
	switch {
	case b.ctx.Err() != nil:
		b.stop(interrupted)
	case left <= 0:
		b.stop(outOfTime)
	}
	if b.why.Load() != running {
		return porcupine.Unknown, porcupine.LinearizationInfo{}
	}
	type found struct {
		res  porcupine.CheckResult
		info porcupine.LinearizationInfo
	}
	done := make(chan found, 1)
	m := b.model
	go func() {
		var f found
		if verbose {
			f.res, f.info = porcupine.CheckOperationsVerbose(m, ops, left)
		} else {
			f.res = porcupine.CheckOperationsTimeout(m, ops, left)
		}
		done <- f
	}()
	select {
	case f := <-done:
		if f.res == porcupine.Unknown { // porcupine's own timeout, between two looks at the clock
			b.stop(outOfTime)
		}
		return f.res, f.info
	case <-b.ctx.Done():
		b.stop(interrupted)
		return porcupine.Unknown, porcupine.LinearizationInfo{}
	}
}

// stopped says why the last search stopped, and how far the check got:
// total is how many operations it had to order. "" when it did not stop.
func (b *budget) stopped(total int) string {
	n := b.done + int(b.deepest.Load())
	switch b.why.Load() {
	case outOfTime:
		return fmt.Sprintf("the check ran out of its %s budget after ordering %d of %d operations", b.lim.Timeout, n, total)
	case outOfMemory:
		return fmt.Sprintf("the check ran out of its %s memory budget after ordering %d of %d operations", mebibytes(b.lim.Memory), n, total)
	case interrupted:
		return fmt.Sprintf("the check was stopped (%v) after ordering %d of %d operations", context.Cause(b.ctx), n, total)
	}
	return ""
}

// mebibytes is n as a person reads it: 128 MiB, or 100000 bytes.
func mebibytes(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}
