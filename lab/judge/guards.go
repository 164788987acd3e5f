package judge

import (
	"fmt"
	"time"
)

// The guards: what production adds to the article's lock. The article's
// lock does not aim for them (its doc comments say so), so a FAIL here is
// what the lab's hardened lock is for, not a bug of the article's.

// releaseCancelled: a release sent on a context already cancelled (the
// work's, after a Ctrl-C or a deadline) still frees the lock.
func releaseCancelled(c *check) (Outcome, string) {
	p, q := c.holder(), c.holder()
	if a := c.acquire(p, "A", 10*time.Second, 5*time.Second); !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	rel := c.release(p, "A", order{Cancel: true})
	c.tl.mark(rel.Call, who("A", p), "release on a cancelled context", false)
	b := c.acquire(q, "B", 10*time.Second, 2*time.Second)
	if !b.OK {
		return Fail, fmt.Sprintf("holder A released at %s on a cancelled context (Release answered %s), and holder B, trying from %s, still had no lock at %s: the lease stays until its TTL of 10s runs out",
			c.sec(rel.Call), quote(rel.Err), c.sec(b.Call), c.sec(b.Ret))
	}
	c.release(q, "B", order{})
	return Pass, "the release went out all the same, and the next holder got the lock at once"
}

// lostAcquireReply: an Acquire whose SET ran but whose reply was lost
// must not leave a lease nobody holds, blocking everyone for its TTL.
func lostAcquireReply(c *check) (Outcome, string) {
	p, q := c.holder(), c.holder()
	ttl := 10 * time.Second
	a := c.call(p, order{Op: "acquire", Lease: "A", Key: c.key, TTL: ttl, Timeout: 3 * time.Second, Lose: true})
	switch {
	case !a.Lost:
		return Unknown, "no command of the lock's Acquire ran through the judge's go-redis client, so the judge could lose no reply"
	case a.OK:
		c.tl.open(who("A", p), a.Ret, "TTL 10s")
		c.release(p, "A", order{})
		return Pass, "Acquire found out, and returned the lease it held"
	}
	c.tl.mark(a.Ret, who("A", p), "Acquire's reply lost", false)
	b := c.acquire(q, "B", ttl, 2*time.Second)
	if !b.OK {
		return Fail, fmt.Sprintf("holder A's Acquire at %s ran (%s) but its reply was lost, and it returned %s, leaving the key to a lease nobody holds: holder B, trying from %s, still had no lock at %s, and will not until the TTL of %s runs out",
			c.sec(a.Call), sentOrNothing(a.Cmds), quote(a.Err), c.sec(b.Call), c.sec(b.Ret), dur(ttl))
	}
	c.release(q, "B", order{})
	return Pass, "Acquire returned " + quote(a.Err) + " and left no lease behind: the next holder got the lock at once"
}

// wrongType: a key that holds something other than a lock (a hash) is
// never released by any holder; Acquire must say so, not wait for it.
func wrongType(c *check) (Outcome, string) {
	if err := c.rdb.HSet(c.ctx, c.key, "not", "a lock").Err(); err != nil {
		return Unknown, "the judge could not write its own Redis: " + err.Error()
	}
	p := c.holder()
	wait := 3 * time.Second
	a := c.acquire(p, "A", time.Second, wait)
	took := time.Duration(a.Ret - a.Call)
	switch {
	case a.OK:
		c.tl.bad(who("A", p))
		return Fail, fmt.Sprintf("Acquire on %s, which holds a hash, returned a lease", c.key)
	case took >= wait*9/10:
		return Fail, fmt.Sprintf("Acquire on %s, which holds a hash no holder will ever release, waited its whole context of %s and answered %s", c.key, dur(wait), quote(a.Err))
	}
	return Pass, fmt.Sprintf("Acquire on a key holding a hash answered at once (%s): %s", dur(took), quote(a.Err))
}
