package judge

// The fencing chapter: the article's step 5.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/lab/internal/wire"
	"example.com/walletlock/wallet/postgres"
)

// dbOp is a read or a write of the check's wallet, made by the judge on
// a holder's behalf with its fence: the database sees the fence, not the
// process, so a holder in any language is judged alike.
type dbOp struct {
	call, ret int64
	balance   int64
	stale     bool // PostgreSQL refused it: a higher fence claimed the row
	err       error
}

// read reads the wallet for a holder: with a fence, it claims the row
// (from now on it refuses any lower fence); without, a plain read.
func (c *check) read(id, fence int64) dbOp {
	d, err := c.r.openDB(c.ctx)
	op := dbOp{call: now(), err: err}
	if err == nil {
		if fence > 0 {
			op.balance, op.err = d.store.Claim(c.ctx, id, fence)
		} else {
			op.balance, op.err = d.store.Balance(c.ctx, id)
		}
	}
	op.ret, op.stale = now(), errors.Is(op.err, postgres.ErrStale)
	return op
}

// write writes the wallet for a holder: only while the row carries its
// fence, with one; a plain write without.
func (c *check) write(id, fence, balance int64) dbOp {
	d, err := c.r.openDB(c.ctx)
	op := dbOp{call: now(), err: err}
	if err == nil {
		if fence > 0 {
			op.err = d.store.WriteFenced(c.ctx, id, fence, balance)
		} else {
			op.err = d.store.Write(c.ctx, id, balance)
		}
	}
	op.ret, op.stale = now(), errors.Is(op.err, postgres.ErrStale)
	return op
}

// fencesIncrease: a burst of fenced leases, whose fences strictly
// increase in the order holders got the lock; then AcquireFenced stopped
// at each of its pause points while another holder takes the lock and
// gives it back: if the first then holds the lock, its fence must be
// above the other's.
func fencesIncrease(c *check) (string, string, string) {
	ttl := 2 * time.Second
	cycles, err := c.burst(ttl, true)
	if err != nil {
		return fail, err.Error(), crashFix(err.Error())
	}
	var held []cycle
	for _, cy := range cycles {
		if cy.ok {
			held = append(held, cy)
		}
	}
	if len(held) == 0 {
		return fail, fmt.Sprintf("none of the %d fenced acquires got the lock; the first said %s", len(cycles), quote(firstErr(cycles))), ""
	}
	if len(held) < 2 {
		return unknown, fmt.Sprintf("only %d fenced acquire got the lock", len(held)), ""
	}
	for i := 1; i < len(held); i++ {
		if a, b := held[i], held[i-1]; a.fence <= b.fence && b.rel <= a.ret {
			c.tl.bad(a.p.row())
			return fail, fmt.Sprintf("holder %s got fence %d at %s, after holder %s had fence %d from %s to %s: not higher",
				a.p.name, a.fence, c.sec(a.ret), b.p.name, b.fence, c.sec(b.ret), c.sec(b.rel)), fixFences
		}
	}
	burst := fmt.Sprintf("%d holders in a burst, fences %d to %d, each above the last", len(held), held[0].fence, held[len(held)-1].fence)

	a, b, e := c.procs[0], c.procs[1], c.procs[2]
	var g answer
	cmds := c.learn(a, func() {}, func() { g = c.acquire(a, ttl, 2*time.Second, true) }, func() { c.release(a, g, request{}) })
	o, why, fix, clause := c.everyPoint("AcquireFenced", cmds, func(pt point, cmds []wire.Command) (string, string, string, bool) {
		// A's lease is long: whatever A's AcquireFenced takes after the
		// judge lets it go, it holds while C tries. The stop itself lasts
		// long enough for B to come and go.
		ttl, stop := 5*time.Second, 250*time.Millisecond
		a.leases++
		pd, _, struck, early := c.strike(a, pt, request{Op: "acquire", Lease: fmt.Sprintf("%s%d", a.name, a.leases), TTL: ms(ttl), Wait: 1500, Fenced: true})
		if !struck {
			if early.OK {
				c.release(a, early, request{})
			}
			return pass, "", "", false
		}
		from := now()
		c.pastTTL(from, stop)
		gb := c.acquire(b, 10*time.Second, time.Second, true)
		if gb.OK {
			c.release(b, gb, request{})
		}
		c.goOn(a, from, "AcquireFenced", pt, cmds)
		ga := c.wait(pd)
		if !ga.OK || !gb.OK {
			return pass, "", "", true
		}
		c.drawLease(a, ga, ttl)
		defer c.release(a, ga, request{})
		// Does A hold the lock now? Another holder cannot take it then.
		ge := c.acquire(e, 10*time.Second, 300*time.Millisecond, true)
		if ge.OK {
			c.release(e, ge, request{})
			return pass, "", "", true // A's lease had lapsed: its fence stops nobody
		}
		if ga.Fence <= gb.Fence {
			c.tl.bad(a.row())
			return fail, fmt.Sprintf("holder A's AcquireFenced sent %s; the judge %s, for %s; holder B took the lock with fence %d and gave it back; then A's AcquireFenced returned the lock, held (holder C could not take it), with fence %d, not above B's: PostgreSQL refuses every write A makes now",
				names(cmds), pt.where(cmds), dur(time.Duration(ga.ret-from)), gb.Fence, ga.Fence), checkThenAct("AcquireFenced", cmds), true
		}
		return pass, "", "", true
	})
	if o != pass {
		return o, why, fix
	}
	return pass, burst + "; " + clause, ""
}

// staleWrite: holder A takes the lock (fenced when the lock has fences)
// and reads the wallet, and is paused (SIGSTOP, and at the wire) past its
// TTL; holder B takes the lock, spends and writes; A wakes and writes what
// it computed. PostgreSQL must refuse A's write. Then AcquireFenced,
// stopped at each of its pause points past its TTL while B takes the lock
// and reads: the live holder B's write must land, not A's.
func staleWrite(c *check) (string, string, string) {
	fenced := c.r.can["fence"]
	set := now()
	id, err := c.r.wallet(c.ctx, 100)
	if err != nil {
		return unknown, "PostgreSQL: " + err.Error(), ""
	}
	a, b := c.holder(), c.holder()
	ttl := 500 * time.Millisecond
	ga := c.acquire(a, ttl, 5*time.Second, fenced)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	ra := c.read(id, ga.Fence)
	if ra.err != nil {
		return unknown, "PostgreSQL: holder A could not read the wallet: " + ra.err.Error(), ""
	}
	c.tl.mark(ra.ret, a.row(), fmt.Sprintf("read %d", ra.balance), false)
	paused := c.pause(a)
	c.sleep(c.jitter(2 * ttl))
	gb := c.acquire(b, ttl*4, 3*time.Second, fenced)
	if !gb.OK {
		c.resume(a)
		return fail, fmt.Sprintf("holder A was paused at %s with a lease of %s, and holder B could not take the lock by %s: %s", c.sec(paused), dur(ttl), c.sec(gb.ret), gb.Error), ""
	}
	rb := c.read(id, gb.Fence)
	wb := c.write(id, gb.Fence, rb.balance-10)
	c.tl.mark(wb.ret, b.row(), fmt.Sprintf("wrote %d", rb.balance-10), false)
	c.release(b, gb, request{})
	woke := c.resume(a)
	c.tl.fault(paused, woke, "holder A paused")
	c.tl.close(a.row(), paused+int64(ttl), "expired while paused")
	wa := c.write(id, ga.Fence, ra.balance-10)
	readBack := now()
	bal, err := c.r.balance(c.ctx, id)
	if err != nil {
		return unknown, "PostgreSQL: " + err.Error(), ""
	}
	lin := c.linearizable(set, readBack, 100, bal, spendOp(1, ra, wa), spendOp(2, rb, wb))
	if wa.err == nil {
		c.tl.mark(wa.ret, a.row(), fmt.Sprintf("wrote %d: one spend lost", ra.balance-10), true)
	} else {
		c.tl.mark(wa.ret, a.row(), "write refused", false)
	}
	story := fmt.Sprintf("holder A (lease %s to %s) read %d and was paused for %s; holder B (lease %s to %s) read %d and wrote %d; A woke at %s",
		c.sec(ga.ret), c.sec(paused+int64(ttl)), ra.balance, dur(time.Duration(woke-paused)), c.sec(gb.ret), c.sec(wb.ret), rb.balance, rb.balance-10, c.sec(woke))
	switch {
	case wa.err != nil && wa.stale:
		story = fmt.Sprintf("%s and PostgreSQL refused its write (fence %d, below B's %d); balance %d%s", story, ga.Fence, gb.Fence, bal, lin)
	case wa.err != nil:
		return unknown, fmt.Sprintf("%s and its write failed for another reason: %s", story, wa.err), ""
	case !fenced:
		return broken, fmt.Sprintf("the lock has no fence, so nothing stops a holder that wakes after its TTL: %s, and wrote %d over it: two spends of 10 accepted, balance %d%s", story, ra.balance-10, bal, lin), ""
	default:
		return fail, fmt.Sprintf("%s and PostgreSQL accepted its fenced write of %d: two spends of 10 accepted, balance %d%s", story, ra.balance-10, bal, lin), fixStaleWrite
	}

	var g answer
	cmds := c.learn(a, func() {}, func() { g = c.acquire(a, ttl, 2*time.Second, true) }, func() { c.release(a, g, request{}) })
	o, why, fix, clause := c.everyPoint("AcquireFenced", cmds, func(pt point, cmds []wire.Command) (string, string, string, bool) {
		ttl := 250 * time.Millisecond
		id, err := c.r.wallet(c.ctx, 100)
		if err != nil {
			return unknown, "PostgreSQL: " + err.Error(), "", true
		}
		a.leases++
		pd, _, struck, early := c.strike(a, pt, request{Op: "acquire", Lease: fmt.Sprintf("%s%d", a.name, a.leases), TTL: ms(ttl), Wait: 1500, Fenced: true})
		if !struck {
			if early.OK {
				c.release(a, early, request{})
			}
			return pass, "", "", false
		}
		from := now()
		c.pastTTL(from, ttl)
		gb := c.acquire(b, 10*time.Second, 2*time.Second, true)
		if !gb.OK {
			c.goOn(a, from, "AcquireFenced", pt, cmds)
			if ga := c.wait(pd); ga.OK {
				c.release(a, ga, request{})
			}
			return pass, "", "", true
		}
		defer c.release(b, gb, request{})
		rb := c.read(id, gb.Fence)
		c.goOn(a, from, "AcquireFenced", pt, cmds)
		ga := c.wait(pd)
		if !ga.OK {
			return pass, "", "", true
		}
		c.drawLease(a, ga, ttl)
		defer c.release(a, ga, request{})
		ra := c.read(id, ga.Fence)
		if ra.err == nil {
			c.write(id, ga.Fence, ra.balance-10)
		}
		wb := c.write(id, gb.Fence, rb.balance-10)
		if wb.stale {
			c.tl.mark(wb.ret, b.row(), "write refused: A's fence is higher", true)
			return fail, fmt.Sprintf("holder A's AcquireFenced sent %s; the judge %s, for %s, past the TTL of %s it asked for; holder B took the lock with fence %d and read the wallet; then A's AcquireFenced returned fence %d, above B's, though its lease had run out: PostgreSQL took A's write and refused the live holder B's",
				names(cmds), pt.where(cmds), dur(time.Duration(ga.ret-from)), dur(ttl), gb.Fence, ga.Fence), checkThenAct("AcquireFenced", cmds), true
		}
		return pass, "", "", true
	})
	if o != pass {
		return o, why, fix
	}
	return pass, story + "; " + clause, ""
}

// pause stops a holder: SIGSTOP where the system has it, and at the wire
// (its proxy holds every command it sends) everywhere. It returns when.
func (c *check) pause(p *proc) int64 {
	p.wire.Freeze()
	p.prog.Pause() // no signals on this system: the wire alone stops it
	return now()
}

// resume lets a paused holder go on, and returns when.
func (c *check) resume(p *proc) int64 {
	p.prog.Resume()
	p.wire.Thaw()
	return now()
}

var _ = context.Background
