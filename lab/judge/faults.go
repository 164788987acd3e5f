package judge

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// restartKeeps: on a Redis that writes every command to its append-only
// file, a lease outlives a restart (SIGKILL, then a start on the same
// files): the next holder must still find it held.
func restartKeeps(c *check) (Outcome, string) {
	dir, err := os.MkdirTemp(c.r.dir, "restart-")
	if err != nil {
		return Unknown, err.Error()
	}
	args := append([]string{"--appendonly", "yes", "--appendfsync", "always"}, c.r.adapter.ServerArgs...)
	srv, err := c.r.procs.StartRedis(c.ctx, dir, args...)
	if err != nil {
		return Unknown, "the judge could not start a Redis of its own: " + err.Error()
	}
	defer srv.Proc().Kill(3 * time.Second)
	c.useRedis(srv)
	p, q := c.holder(), c.holder()
	ttl := 10 * time.Second
	a := c.acquire(p, "A", ttl, 5*time.Second)
	if !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	down := now()
	if err := srv.Restart(c.ctx); err != nil {
		return Unknown, "the judge could not restart its Redis: " + err.Error()
	}
	up := now()
	c.tl.fault(down, up, "Redis killed and started again")
	b := c.acquire(q, "B", ttl, time.Second)
	if b.OK {
		c.tl.bad(who("B", q))
		why := fmt.Sprintf("Redis was killed at %s and started again by %s, and it had forgotten holder A's lease (granted at %s, TTL %s): holder B got the lock at %s while A still held it",
			c.sec(down), c.sec(up), c.sec(a.Ret), dur(ttl), c.sec(b.Ret))
		if len(c.r.adapter.ServerArgs) > 0 {
			why += "; this Redis ran with " + strings.Join(c.r.adapter.ServerArgs, " ")
		}
		return Fail, why
	}
	c.release(p, "A", order{})
	return Pass, fmt.Sprintf("Redis restarted at %s with holder A's lease in its append-only file; holder B found it held", c.sec(down))
}

// restartEmpty: holder A holds the lock and has read the wallet; Redis
// is killed and started again with nothing (no persistence); holder B
// takes the lock the restart forgot, spends and writes; A writes. With a
// fence, PostgreSQL must keep the money right.
func restartEmpty(c *check) (Outcome, string) {
	fenced := c.r.claims["fence"]
	set := now()
	id, err := c.r.wallet(c.ctx, 100)
	if err != nil {
		return Unknown, "PostgreSQL: " + err.Error()
	}
	srv, err := c.r.procs.StartRedis(c.ctx, c.r.dir)
	if err != nil {
		return Unknown, "the judge could not start a Redis of its own: " + err.Error()
	}
	defer srv.Proc().Kill(3 * time.Second)
	c.useRedis(srv)
	p, q := c.holder(), c.holder()
	ttl := 5 * time.Second
	a := c.acquireMaybeFenced(p, "A", ttl, fenced)
	if !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	ra := c.call(p, order{Op: "read", Lease: "A", Wallet: id, Fenced: fenced})
	if !ra.OK {
		return Unknown, "holder A could not read the wallet: " + ra.Err
	}
	c.tl.mark(ra.Ret, who("A", p), fmt.Sprintf("read %d", ra.Balance), false)
	down := now()
	if err := srv.Restart(c.ctx); err != nil {
		return Unknown, "the judge could not restart its Redis: " + err.Error()
	}
	c.tl.fault(down, now(), "Redis restarted empty")
	c.tl.close(who("A", p), down, "forgotten when Redis restarted empty")
	b := c.acquireMaybeFenced(q, "B", ttl, fenced)
	if !b.OK {
		c.release(p, "A", order{})
		return Pass, fmt.Sprintf("after Redis restarted empty at %s, holder B could not take the lock (%s)", c.sec(down), b.Err)
	}
	rb := c.call(q, order{Op: "read", Lease: "B", Wallet: id, Fenced: fenced})
	var wb answer
	story := fmt.Sprintf("Redis restarted empty at %s, while holder A (granted at %s, TTL %s) held the lock and had read %d; holder B got the lock at %s", c.sec(down), c.sec(a.Ret), dur(ttl), ra.Balance, c.sec(b.Ret))
	if rb.OK {
		wb = c.call(q, order{Op: "write", Lease: "B", Wallet: id, Fenced: fenced, Balance: rb.Balance - 10})
		c.tl.mark(wb.Ret, who("B", q), fmt.Sprintf("wrote %d", rb.Balance-10), false)
		story += fmt.Sprintf(", read %d and wrote %d", rb.Balance, rb.Balance-10)
	} else {
		c.tl.mark(rb.Ret, who("B", q), "claim refused", false)
		story += fmt.Sprintf(", and PostgreSQL refused its claim (fence %d, not above A's %d: the fence counter restarted with Redis)", b.Fence, a.Fence)
	}
	c.release(q, "B", order{})
	wa := c.call(p, order{Op: "write", Lease: "A", Wallet: id, Fenced: fenced, Balance: ra.Balance - 10})
	label := "write refused"
	if wa.OK && rb.OK {
		label = fmt.Sprintf("wrote %d over B's %d: one spend lost", ra.Balance-10, rb.Balance-10)
	} else if wa.OK {
		label = fmt.Sprintf("wrote %d", ra.Balance-10)
	}
	c.tl.mark(wa.Ret, who("A", p), label, wa.OK && rb.OK)
	c.release(p, "A", order{})
	readBack := now()
	bal, err := c.r.balance(c.ctx, id)
	if err != nil {
		return Unknown, "PostgreSQL: " + err.Error()
	}
	lin := linearizable(set, readBack, 100, bal, spendOp(1, ra, wa), spendOp(2, rb, wb))
	lost := rb.OK && wa.OK && bal == 90
	switch {
	case !lost:
		return Pass, fmt.Sprintf("%s; the balance is %d, right for the spends accepted%s", story, bal, lin)
	case fenced:
		return Fail, fmt.Sprintf("%s; A then wrote %d too: two spends of 10 accepted, balance %d%s", story, ra.Balance-10, bal, lin)
	}
	return Broken, fmt.Sprintf("a Redis restarted empty forgets the lease, and nothing else stops the old holder: %s; A then wrote %d over it: two spends of 10 accepted, balance %d%s", story, ra.Balance-10, bal, lin)
}
