package judge

// The guards: what production adds to the article's lock. The article's
// lock does not aim for them (its doc comments say so), so a FAIL here is
// what the lab's hardened lock is for, not a bug of the article's.

import (
	"fmt"
	"strings"
	"time"

	"example.com/walletlock/lab/internal/wire"
)

// releaseCancelled: a release sent on a context already cancelled (the
// work's, after a Ctrl-C or a deadline) still frees the lock.
func releaseCancelled(c *check) (string, string, string) {
	a, b := c.holder(), c.holder()
	ga := c.acquire(a, 10*time.Second, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	rel := c.release(a, ga, request{Cancelled: true})
	c.tl.mark(rel.call, a.row(), "release on a cancelled context", false)
	gb := c.acquire(b, 10*time.Second, 2*time.Second, false)
	if !gb.OK {
		return fail, fmt.Sprintf("holder A released at %s on a cancelled context (Release answered %s, and sent %s), and holder B, trying from %s, still had no lock at %s: the lease stays until its TTL of 10s runs out",
			c.sec(rel.call), quote(rel.Error), sent(a), c.sec(gb.call), c.sec(gb.ret)), fixCancelled
	}
	c.release(b, gb, request{})
	return pass, "the release went out all the same, and the next holder got the lock at once", ""
}

// lostAcquireReply: an Acquire whose last command ran but whose reply was
// lost must not leave a lease nobody holds, blocking everyone for its TTL.
func lostAcquireReply(c *check) (string, string, string) {
	a, b := c.holder(), c.holder()
	ttl := 10 * time.Second
	var g answer
	cmds := c.learn(a, func() {}, func() { g = c.acquire(a, ttl, 2*time.Second, false) }, func() { c.release(a, g, request{}) })
	if len(cmds) == 0 {
		return unknown, "Acquire sent no command whose reply the judge could lose", ""
	}
	c.newKey()
	a.leases++
	pd, at, struck, _ := c.strike(a, point{wire.LoseReply, len(cmds)}, request{Op: "acquire", Lease: fmt.Sprintf("%s%d", a.name, a.leases), TTL: ms(ttl), Wait: 3000})
	ga := c.wait(pd)
	switch {
	case !struck:
		return unknown, "Acquire sent fewer commands than the judge learnt, and no reply was lost", ""
	case ga.OK:
		c.drawLease(a, ga, ttl)
		c.release(a, ga, request{})
		return pass, "Acquire found out, and returned the lease it held", ""
	}
	c.tl.mark(ga.ret, a.row(), "Acquire's reply lost", false)
	gb := c.acquire(b, ttl, 2*time.Second, false)
	if !gb.OK {
		return fail, fmt.Sprintf("holder A's Acquire at %s ran (%s) but its reply was lost, and it returned %s, leaving the key to a lease nobody holds: holder B, trying from %s, still had no lock at %s, and will not until the TTL of %s runs out",
			c.sec(ga.call), at, quote(ga.Error), c.sec(gb.call), c.sec(gb.ret), dur(ttl)), fixOrphan
	}
	c.release(b, gb, request{})
	return pass, "Acquire returned " + quote(ga.Error) + " and left no lease behind: the next holder got the lock at once", ""
}

// wrongType: a key that holds something other than a lock (a hash) is
// never released by any holder; Acquire must say so, not wait for it.
func wrongType(c *check) (string, string, string) {
	a := c.holder()
	key := c.lockKey(a)
	if err := c.rdb.HSet(c.ctx, key, "not", "a lock").Err(); err != nil {
		return unknown, "the judge could not write its own Redis: " + err.Error(), ""
	}
	if key != c.key {
		key = c.key + " (the lock keeps it in " + key + ")"
	}
	wait := 3 * time.Second
	ga := c.acquire(a, time.Second, wait, false)
	took := time.Duration(ga.ret - ga.call)
	switch {
	case ga.OK:
		c.tl.bad(a.row())
		return fail, fmt.Sprintf("Acquire on %s, which holds a hash, returned a lease", key), fixWrongType
	case took >= wait*9/10:
		return fail, fmt.Sprintf("Acquire on %s, which holds a hash no holder will ever release, waited its whole context of %s and answered %s", key, dur(wait), quote(ga.Error)), fixWrongType
	}
	return pass, fmt.Sprintf("Acquire on a key holding a hash answered at once (%s): %s", dur(took), quote(ga.Error)), ""
}

// lockKey learns the key p's lock keeps a lease in, for the check's next
// key: the name Acquire is given, or one that holds it (rueidislock's
// rueidislock:0:<name>), as the first command of an Acquire on the
// current key named it. It moves the check to the next key, untouched.
func (c *check) lockKey(p *proc) string {
	probe := c.key
	p.wire.Arm(wire.None, 0)
	g := c.acquire(p, time.Second, 2*time.Second, false)
	cmds := p.wire.Log()
	if g.OK {
		c.release(p, g, request{})
	}
	next := c.newKey()
	for _, cmd := range cmds {
		for _, arg := range cmd.Args {
			if strings.Contains(arg, probe) {
				return strings.Replace(arg, probe, next, 1)
			}
		}
	}
	return next
}
