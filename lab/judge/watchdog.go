package judge

// The watchdog chapter: the article's step 3.

import (
	"fmt"
	"time"

	"example.com/walletlock/lab/internal/wire"
)

// refreshOwn: a refresh extends a live lease; a refresh of a lease that
// lapsed fails, creates nothing, and leaves the next holder's lease alone;
// and so does a Refresh stopped at any of its pause points past its TTL.
func refreshOwn(c *check) (string, string, string) {
	a, b, e := c.holder(), c.holder(), c.holder()
	short, long := 400*time.Millisecond, 10*time.Second

	// A refreshes late in its lease, to the TTL it took it with: B, trying
	// after that first TTL and well before the second ends, must find it
	// held.
	ttl := 2 * time.Second
	ga := c.acquire(a, ttl, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	c.sleep(c.jitter(ttl * 3 / 5))
	ref := c.call(a, request{Op: "refresh", Lease: ga.Lease, TTL: ms(ttl)})
	c.tl.mark(ref.ret, a.row(), "refreshed", false)
	if !ref.OK {
		return fail, fmt.Sprintf("holder A's refresh at %s, %s after its grant with a TTL of %s, failed: %s", c.sec(ref.call), dur(time.Duration(ref.call-ga.ret)), dur(ttl), ref.Error), ""
	}
	if took := time.Duration(ref.ret - ref.call); took > 400*time.Millisecond {
		c.release(a, ga, request{})
		return unknown, fmt.Sprintf("holder A's refresh took %s, too long on this busy machine to time the check", dur(took)), ""
	}
	c.until(ref.ret + int64(ttl-900*time.Millisecond))
	if gb := c.acquire(b, long, 500*time.Millisecond, false); gb.OK {
		c.tl.bad(b.row())
		c.release(b, gb, request{})
		return fail, fmt.Sprintf("holder A refreshed its lease (TTL %s, granted at %s) at %s, yet holder B got the lock at %s, when only the first TTL had run out: the refresh did not extend it",
			dur(ttl), c.sec(ga.ret), c.sec(ref.call), c.sec(gb.ret)), "set the key's TTL again (PEXPIRE key ttl) while it holds your token"
	}
	c.release(a, ga, request{})

	// A lease that lapsed, with nobody after it: refreshing it must not
	// bring it back.
	c.newKey()
	ga = c.acquire(a, short/2, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	c.sleep(c.jitter(short))
	c.lapse(a, ga.call+int64(short/2))
	ref = c.call(a, request{Op: "refresh", Lease: ga.Lease, TTL: ms(long)})
	c.tl.mark(ref.ret, a.row(), "refresh after expiry", false)
	if ref.OK {
		c.tl.open(a.row(), ref.ret, "re-created by refresh")
		c.tl.bad(a.row())
		return fail, fmt.Sprintf("holder A's lease expired at %s, and its refresh at %s returned success: it re-created the lease for %s", c.sec(ga.call+int64(short/2)), c.sec(ref.call), dur(long)), fixRecreate
	}
	gb := c.acquire(b, long, 2*time.Second, false)
	if !gb.OK {
		return fail, fmt.Sprintf("holder A's lease expired at %s and its refresh at %s failed (%s), yet holder B could not take the free lock by %s: the refresh re-created it",
			c.sec(ga.call+int64(short/2)), c.sec(ref.call), ref.Error, c.sec(gb.ret)), fixRecreate
	}
	// B holds now; A's late refresh must leave B's lease alone.
	late := c.call(a, request{Op: "refresh", Lease: ga.Lease, TTL: 300})
	c.tl.mark(late.ret, a.row(), "late refresh", false)
	if late.OK {
		return fail, fmt.Sprintf("holder A's refresh at %s returned success while holder B held the lock: it extended another's lease", c.sec(late.call)), fixRecreate
	}
	c.sleep(c.jitter(600 * time.Millisecond))
	if ge := c.acquire(e, long, 300*time.Millisecond, false); ge.OK {
		c.tl.bad(e.row())
		c.release(e, ge, request{})
		return fail, fmt.Sprintf("holder A's late refresh to 300ms at %s cut holder B's lease short: holder C got the lock at %s while B still held it", c.sec(late.call), c.sec(ge.ret)), fixRecreate
	}
	c.release(b, gb, request{})

	var g answer
	cmds := c.learn(a, func() { g = c.acquire(a, long, 2*time.Second, false) },
		func() { c.call(a, request{Op: "refresh", Lease: g.Lease, TTL: ms(long)}) }, func() { c.release(a, g, request{}) })
	o, why, fix, clause := c.everyPoint("Refresh", cmds, func(pt point, cmds []wire.Command) (string, string, string, bool) {
		ttl := 300 * time.Millisecond
		ga := c.acquire(a, ttl, 2*time.Second, false)
		if !ga.OK {
			return unknown, "holder A could not take a free lock: " + ga.Error, "", true
		}
		defer c.call(a, request{Op: "release", Lease: ga.Lease})
		pd, _, struck, _ := c.strike(a, pt, request{Op: "refresh", Lease: ga.Lease, TTL: ms(ttl)})
		if !struck {
			return pass, "", "", false
		}
		from := now()
		c.pastTTL(from, ttl)
		c.lapse(a, from+int64(ttl))
		gb := c.acquire(b, long, 2*time.Second, false)
		c.goOn(a, from, "Refresh", pt, cmds)
		ref := c.wait(pd)
		c.sleep(60 * time.Millisecond) // a beat, for the drawing
		c.tl.mark(ref.ret, a.row(), "Refresh returned", false)
		if !gb.OK {
			return pass, "", "", true // A's lease lived on: nobody else held the lock
		}
		c.pastTTL(ref.ret, ttl) // a late extension to A's TTL would have cut B's lease by now
		story := fmt.Sprintf("holder A's Refresh sent %s; the judge %s, for %s, past its lease's TTL of %s, and holder B took the lock at %s (TTL %s); A went on at %s",
			names(cmds), pt.where(cmds), dur(time.Duration(ref.ret-from)), dur(ttl), c.sec(gb.ret), dur(long), c.sec(ref.ret))
		ge := c.acquire(e, long, 300*time.Millisecond, false)
		rb := c.release(b, gb, request{})
		switch {
		case ge.OK:
			c.release(e, ge, request{})
			c.tl.bad(e.row())
			c.tl.mark(ref.ret, b.row(), "lease cut to A's TTL", true)
			return fail, story + fmt.Sprintf(" and set B's lease to its own TTL of %s: holder C got the lock at %s while B held it", dur(ttl), c.sec(ge.ret)), checkThenAct("Refresh", cmds), true
		case rb.NotHeld:
			c.tl.mark(rb.ret, b.row(), "lease gone", true)
			return fail, story + fmt.Sprintf(", and B's release at %s answered %s: A's Refresh cut B's lease short", c.sec(rb.call), quote(rb.Error)), checkThenAct("Refresh", cmds), true
		}
		return pass, "", "", true
	})
	if o != pass {
		return o, why, fix
	}
	return pass, "a refresh extended its own lease; a refresh after expiry failed, created nothing and left the next holder's lease alone; " + clause, ""
}

// watchdogKeeps: a holder that works four TTLs long under its watchdog
// keeps the lease all along.
func watchdogKeeps(c *check) (string, string, string) {
	a, b := c.holder(), c.holder()
	ttl := time.Second
	ga := c.acquire(a, ttl, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	if w := c.call(a, request{Op: "watch", Lease: ga.Lease, TTL: ms(ttl)}); !w.OK {
		return fail, "Watch failed: " + w.Error, crashFix(w.Error)
	}
	gb := c.acquire(b, ttl, 3*ttl, false)
	if gb.OK {
		c.tl.bad(b.row())
		if l, lost := c.awaitLost(ga.Lease, ttl); lost {
			c.tl.close(a.row(), l.ret, "work cancelled")
			return unknown, fmt.Sprintf("holder B got the lock at %s, and holder A's watchdog cancelled A's work at %s (%s): a refresh came too late, as on a machine too busy to run it in time; the watchdog did its part", c.sec(gb.ret), c.sec(l.ret), l.Error), ""
		}
		return fail, fmt.Sprintf("holder A's watchdog should have kept its lease (TTL %s), yet holder B got the lock at %s while A's work still ran", dur(ttl), c.sec(gb.ret)), fixWatchdogDies
	}
	if l, lost := c.awaitLost(ga.Lease, 0); lost {
		c.tl.mark(l.ret, a.row(), "work cancelled", true)
		return fail, fmt.Sprintf("holder A's watchdog cancelled the work at %s though nobody else held the lock: %s", c.sec(l.ret), l.Error), fixWatchdogDies
	}
	c.call(a, request{Op: "stop", Lease: ga.Lease})
	c.release(a, ga, request{})
	if gc := c.acquire(b, ttl, 2*time.Second, false); !gc.OK {
		return fail, fmt.Sprintf("after holder A stopped its watchdog and released at %s, holder B could not take the lock by %s", c.sec(gc.call), c.sec(gc.ret)), "stop ends the watchdog: no refresh after it"
	} else {
		c.release(b, gc, request{})
	}
	return pass, fmt.Sprintf("the lease (TTL %s) outlived %s of work; nobody else got in", dur(ttl), dur(3*ttl)), ""
}

// workCancelled: the judge wipes its Redis under a watched lease, another
// holder takes the lock, and the watchdog must cancel the work within a
// TTL; then the watchdog's refresh is stopped at each of its pause points
// past the TTL, and the work must be cancelled before another holder gets
// the lock, with that holder's lease left alone.
func workCancelled(c *check) (string, string, string) {
	a, b, e := c.holder(), c.holder(), c.holder()
	ttl := time.Second
	ga := c.acquire(a, ttl, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	if w := c.call(a, request{Op: "watch", Lease: ga.Lease, TTL: ms(ttl)}); !w.OK {
		return fail, "Watch failed: " + w.Error, crashFix(w.Error)
	}
	c.sleep(c.jitter(ttl / 2))
	if l, lost := c.awaitLost(ga.Lease, 0); lost {
		c.tl.close(a.row(), l.ret, "work cancelled")
		c.tl.bad(a.row())
		return fail, fmt.Sprintf("holder A's watchdog cancelled the work at %s, while its lease (granted at %s, TTL %s) still held and before the judge took it away: %s", c.sec(l.ret), c.sec(ga.ret), dur(ttl), l.Error), fixWatchdogDies
	}
	wiped := now()
	if err := c.rdb.FlushAll(c.ctx).Err(); err != nil { // the judge's own server, nobody else's
		return unknown, "the judge could not wipe its own Redis: " + err.Error(), ""
	}
	c.tl.fault(wiped, wiped, "the judge deleted the lease")
	gb := c.acquire(b, ttl, 2*time.Second, false)
	l, lost := c.awaitLost(ga.Lease, 3*ttl)
	if gb.OK {
		c.release(b, gb, request{})
	}
	c.call(a, request{Op: "stop", Lease: ga.Lease})
	if !lost {
		c.tl.bad(a.row())
		return fail, fmt.Sprintf("holder A's lease was deleted at %s and holder B took the lock at %s, yet A's work was still running at %s, %s later: its watchdog never cancelled it",
			c.sec(wiped), c.sec(gb.ret), c.sec(now()), dur(3*ttl)), fixNotCancelled
	}
	c.tl.close(a.row(), l.ret, "work cancelled")
	after := time.Duration(l.ret - wiped)
	if after > ttl {
		return unknown, fmt.Sprintf("the work was cancelled %s after the lease was lost, later than its TTL of %s (a busy machine can delay a watchdog this much)", dur(after), dur(ttl)), ""
	}
	first := fmt.Sprintf("the work was cancelled %s after the lease was lost (TTL %s)", dur(after), dur(ttl))

	// The watchdog's refresh, stopped at each of its points.
	wttl := 600 * time.Millisecond
	cmds := c.learnWatchdog(a, wttl)
	o, why, fix, clause := c.everyPoint("the watchdog's refresh", cmds, func(pt point, cmds []wire.Command) (string, string, string, bool) {
		ga := c.acquire(a, wttl, 2*time.Second, false)
		if !ga.OK {
			return unknown, "holder A could not take a free lock: " + ga.Error, "", true
		}
		defer func() {
			c.call(a, request{Op: "stop", Lease: ga.Lease})
			c.call(a, request{Op: "release", Lease: ga.Lease})
		}()
		if w := c.call(a, request{Op: "watch", Lease: ga.Lease, TTL: ms(wttl)}); !w.OK {
			return fail, "Watch failed: " + w.Error, crashFix(w.Error), true
		}
		a.wire.Arm(pt.fault, pt.k)
		at, struck := c.awaitStruck(a, 2*wttl)
		if !struck {
			return pass, "", "", false
		}
		from := now()
		_ = at
		c.pastTTL(from, wttl)
		gb := c.acquire(b, 10*time.Second, 2*time.Second, false)
		l, lost := c.awaitLost(ga.Lease, 0)
		c.goOn(a, from, "the watchdog's refresh", pt, cmds)
		if !gb.OK {
			return pass, "", "", true // A's lease lived on (its watchdog renewed it another way)
		}
		story := fmt.Sprintf("holder A's watchdog refreshed with %s; the judge %s, for longer than the TTL of %s, and holder B took the lock at %s",
			names(cmds), pt.where(cmds), dur(wttl), c.sec(gb.ret))
		if !lost || l.ret > gb.ret {
			c.tl.bad(a.row())
			return fail, story + ", while A's work still ran: the watchdog did not cancel it when its refresh did not answer within a third of the TTL", fixNotCancelled, true
		}
		c.tl.close(a.row(), l.ret, "work cancelled")
		c.pastTTL(now(), wttl)
		ge := c.acquire(e, 10*time.Second, 300*time.Millisecond, false)
		rb := c.release(b, gb, request{})
		switch {
		case ge.OK:
			c.release(e, ge, request{})
			c.tl.bad(e.row())
			return fail, story + fmt.Sprintf("; A's work was cancelled at %s, but its refresh went on when the judge let it go and set B's lease to A's TTL: holder C got the lock at %s while B held it", c.sec(l.ret), c.sec(ge.ret)), checkThenAct("Refresh", cmds), true
		case rb.NotHeld:
			c.tl.mark(rb.ret, b.row(), "lease gone", true)
			return fail, story + fmt.Sprintf("; B's release at %s answered %s: A's late refresh cut B's lease short", c.sec(rb.call), quote(rb.Error)), checkThenAct("Refresh", cmds), true
		}
		return pass, "", "", true
	})
	if o != pass {
		return o, why, fix
	}
	return pass, first + "; " + clause, ""
}

// awaitStruck waits, at most d, for the fault armed on p's proxy to
// strike: for a watchdog, whose refreshes come by themselves.
func (c *check) awaitStruck(p *proc, d time.Duration) (wire.Command, bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case cmd, ok := <-p.wire.Struck():
		return cmd, ok
	case <-t.C:
		return wire.Command{}, false
	case <-c.ctx.Done():
		panic(noReturn{c.ctx.Err()})
	}
}

// learnWatchdog learns the commands of one refresh of p's watchdog, with
// a TTL of ttl: those it sends within a tenth of the TTL after its first,
// well before the next refresh (a third of the TTL later). It does so
// twice, for the second time to find every script cached.
func (c *check) learnWatchdog(p *proc, ttl time.Duration) []wire.Command {
	var cmds []wire.Command
	for range 2 {
		c.newKey()
		g := c.acquire(p, ttl, 2*time.Second, false)
		if !g.OK {
			return nil
		}
		p.wire.Arm(wire.None, 0)
		c.call(p, request{Op: "watch", Lease: g.Lease, TTL: ms(ttl)})
		deadline := time.Now().Add(2 * ttl)
		for len(p.wire.Log()) == 0 && time.Now().Before(deadline) {
			c.sleep(5 * time.Millisecond)
		}
		c.sleep(ttl / 10)
		cmds = nil
		for _, cmd := range p.wire.Log() {
			if len(cmds) == 0 || cmd.Received-cmds[0].Received < int64(ttl/10) {
				cmds = append(cmds, cmd)
			}
		}
		c.call(p, request{Op: "stop", Lease: g.Lease})
		c.release(p, g, request{})
	}
	return cmds
}
