package judge

import (
	"fmt"
	"time"
)

// refreshOwn: a refresh extends a live lease; a refresh of a lease that
// lapsed fails, creates nothing, and leaves the next holder's lease alone.
func refreshOwn(c *check) (Outcome, string) {
	p, q, r := c.holder(), c.holder(), c.holder()
	short, long := 400*time.Millisecond, 10*time.Second

	// A refreshes late in its lease, to the TTL it took it with: B, trying
	// after that first TTL and well before the second ends, must find it
	// held.
	ttl := 2 * time.Second
	a := c.acquire(p, "A", ttl, 5*time.Second)
	if !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	c.sleep(c.jitter(ttl * 3 / 5))
	ref := c.call(p, order{Op: "refresh", Lease: "A", TTL: ttl})
	c.tl.mark(ref.Ret, who("A", p), "refreshed", false)
	if !ref.OK {
		return Fail, fmt.Sprintf("holder A's refresh at %s, %s after its grant with a TTL of %s, failed: %s", c.sec(ref.Call), dur(time.Duration(ref.Call-a.Ret)), dur(ttl), ref.Err)
	}
	if took := time.Duration(ref.Ret - ref.Call); took > 400*time.Millisecond {
		c.release(p, "A", order{})
		return Unknown, fmt.Sprintf("holder A's refresh took %s, too long on this busy machine to time the check", dur(took))
	}
	if wait := time.Until(time.Unix(0, ref.Ret).Add(ttl - 900*time.Millisecond)); wait > 0 {
		c.sleep(wait)
	}
	if b := c.acquire(q, "B", long, 500*time.Millisecond); b.OK {
		c.tl.bad(who("B", q))
		return Fail, fmt.Sprintf("holder A refreshed its lease (TTL %s, granted at %s) at %s, yet holder B got the lock at %s, when only the first TTL had run out: the refresh did not extend it",
			dur(ttl), c.sec(a.Ret), c.sec(ref.Call), c.sec(b.Ret))
	}
	c.release(p, "A", order{})

	// A lease that lapsed, with nobody after it: refreshing it must not
	// bring it back.
	c.key = "judge:refresh-own:lapsed:lock"
	a = c.acquire(p, "C", short/2, 5*time.Second)
	if !a.OK {
		return Fail, "holder C could not take a free lock: " + a.Err
	}
	c.sleep(c.jitter(short))
	c.lapse(p, "C", a.Call+int64(short/2))
	ref = c.call(p, order{Op: "refresh", Lease: "C", TTL: long})
	c.tl.mark(ref.Ret, who("C", p), "refresh after expiry", false)
	if ref.OK {
		c.tl.open(who("C", p), ref.Ret, "re-created by refresh")
		c.tl.bad(who("C", p))
		return Fail, fmt.Sprintf("holder C's lease expired at %s, and its refresh at %s returned success: it re-created the lease for %s", c.sec(a.Call+int64(short/2)), c.sec(ref.Call), dur(long))
	}
	if d := c.acquire(q, "D", long, 2*time.Second); !d.OK {
		return Fail, fmt.Sprintf("holder C's lease expired at %s and its refresh at %s failed (%s), yet holder D could not take the free lock by %s: the refresh re-created it",
			c.sec(a.Call+int64(short/2)), c.sec(ref.Call), ref.Err, c.sec(d.Ret))
	}

	// D holds now; C's late refresh must leave D's lease alone.
	late := c.call(p, order{Op: "refresh", Lease: "C", TTL: 300 * time.Millisecond})
	c.tl.mark(late.Ret, who("C", p), "late refresh", false)
	if late.OK {
		return Fail, fmt.Sprintf("holder C's refresh at %s returned success while holder D held the lock: it extended another's lease", c.sec(late.Call))
	}
	c.sleep(c.jitter(600 * time.Millisecond))
	if e := c.acquire(r, "E", long, 300*time.Millisecond); e.OK {
		c.tl.bad(who("E", r))
		return Fail, fmt.Sprintf("holder C's late refresh to 300ms at %s cut holder D's lease short: holder E got the lock at %s while D still held it", c.sec(late.Call), c.sec(e.Ret))
	}
	c.release(q, "D", order{})
	return Pass, "a refresh extended its own lease; a refresh after expiry failed, created nothing and left the next holder's lease alone"
}

// watchdogKeeps: a holder that works four TTLs long under its watchdog
// keeps the lease all along.
func watchdogKeeps(c *check) (Outcome, string) {
	p, q := c.holder(), c.holder()
	ttl := time.Second
	if a := c.acquire(p, "A", ttl, 5*time.Second); !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	if w := c.call(p, order{Op: "watch", Lease: "A", TTL: ttl}); !w.OK {
		return Fail, "Watch failed: " + w.Err
	}
	b := c.acquire(q, "B", ttl, 3*ttl)
	if b.OK {
		c.tl.bad(who("B", q))
		if l, lost := c.awaitLost("A", ttl); lost {
			c.tl.close(who("A", p), l.Ret, "work cancelled")
			return Unknown, fmt.Sprintf("holder B got the lock at %s, and holder A's watchdog cancelled A's work at %s (%s): a refresh came too late, as on a machine too busy to run it in time; the watchdog did its part", c.sec(b.Ret), c.sec(l.Ret), l.Err)
		}
		return Fail, fmt.Sprintf("holder A's watchdog should have kept its lease (TTL %s), yet holder B got the lock at %s while A's work still ran", dur(ttl), c.sec(b.Ret))
	}
	if l, lost := c.awaitLost("A", 0); lost {
		c.tl.mark(l.Ret, who("A", p), "work cancelled", true)
		return Fail, fmt.Sprintf("holder A's watchdog cancelled the work at %s though nobody else held the lock: %s", c.sec(l.Ret), l.Err)
	}
	c.call(p, order{Op: "stop", Lease: "A"})
	c.release(p, "A", order{})
	if b := c.acquire(q, "C", ttl, 2*time.Second); !b.OK {
		return Fail, fmt.Sprintf("after holder A stopped its watchdog and released at %s, holder C could not take the lock by %s", c.sec(b.Call), c.sec(b.Ret))
	}
	c.release(q, "C", order{})
	return Pass, fmt.Sprintf("the lease (TTL %s) outlived %s of work; nobody else got in", dur(ttl), dur(3*ttl))
}

// workCancelled: the judge wipes its Redis under a watched lease, another
// holder takes the lock, and the watchdog must cancel the work within a
// TTL.
func workCancelled(c *check) (Outcome, string) {
	p, q := c.holder(), c.holder()
	ttl := time.Second
	a := c.acquire(p, "A", ttl, 5*time.Second)
	if !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	if w := c.call(p, order{Op: "watch", Lease: "A", TTL: ttl}); !w.OK {
		return Fail, "Watch failed: " + w.Err
	}
	c.sleep(c.jitter(ttl / 2))
	if l, lost := c.awaitLost("A", 0); lost {
		c.tl.close(who("A", p), l.Ret, "work cancelled")
		c.tl.bad(who("A", p))
		return Fail, fmt.Sprintf("holder A's watchdog cancelled the work at %s, while its lease (granted at %s, TTL %s) still held and before the judge took it away: %s", c.sec(l.Ret), c.sec(a.Ret), dur(ttl), l.Err)
	}
	wiped := now()
	if err := c.rdb.FlushAll(c.ctx).Err(); err != nil { // the judge's own server, nobody else's
		return Unknown, "the judge could not wipe its own Redis: " + err.Error()
	}
	c.tl.fault(wiped, wiped, "the judge deleted the lease")
	b := c.acquire(q, "B", ttl, 2*time.Second)
	l, lost := c.awaitLost("A", 3*ttl)
	if b.OK {
		c.release(q, "B", order{})
	}
	c.call(p, order{Op: "stop", Lease: "A"})
	if !lost {
		c.tl.bad(who("A", p))
		return Fail, fmt.Sprintf("holder A's lease was deleted at %s and holder B took the lock at %s, yet A's work was still running at %s, %s later: its watchdog never cancelled it",
			c.sec(wiped), c.sec(b.Ret), c.sec(now()), dur(3*ttl))
	}
	c.tl.close(who("A", p), l.Ret, "work cancelled")
	after := time.Duration(l.Ret - wiped)
	if after > ttl {
		return Unknown, fmt.Sprintf("the work was cancelled %s after the lease was lost, later than its TTL of %s (a busy machine can delay a watchdog this much)", dur(after), dur(ttl))
	}
	return Pass, fmt.Sprintf("the work was cancelled %s after the lease was lost (TTL %s)", dur(after), dur(ttl))
}
