package judge

import (
	"fmt"
	"sort"
	"time"
)

// fencesIncrease: 4 processes take the fenced lock in turns; ordered by
// when they got it, their fences strictly increase.
func fencesIncrease(c *check) (Outcome, string) {
	ttl := 2 * time.Second
	var ps []*proc
	var waits []<-chan answer
	var orders []order
	for i := range 4 {
		p := c.holder()
		ps = append(ps, p)
		o := order{Op: "burst", Lease: fmt.Sprintf("P%d", i+1), Key: c.key, TTL: ttl, Timeout: 10 * time.Second,
			N: 6, Conc: 2, Hold: time.Millisecond, Fenced: true}
		orders = append(orders, o)
		waits = append(waits, p.send(o))
	}
	for i, p := range ps {
		if _, err := p.await(orders[i], waits[i], 40*time.Second); err != nil {
			return Fail, err.Error()
		}
	}
	c.mu.Lock()
	var held []answer
	for _, a := range c.cycles {
		if a.OK {
			held = append(held, a)
		}
	}
	cycles := c.cycles
	c.mu.Unlock()
	if len(held) == 0 {
		return Fail, fmt.Sprintf("none of the %d fenced acquires got the lock; the first said %s", len(cycles), quote(firstErr(cycles)))
	}
	if len(held) < 2 {
		return Unknown, fmt.Sprintf("only %d fenced acquire got the lock", len(held))
	}
	sort.Slice(held, func(i, j int) bool { return held[i].Ret < held[j].Ret })
	for i, a := range held {
		c.tl.open("holder "+a.Lease, a.Ret, fmt.Sprintf("fence %d", a.Fence))
		c.tl.close("holder "+a.Lease, a.Rel, "")
		if i == 0 {
			continue
		}
		if b := held[i-1]; a.Fence <= b.Fence && b.Rel <= a.Ret {
			c.tl.bad("holder " + a.Lease)
			return Fail, fmt.Sprintf("holder %s got fence %d at %s, after holder %s had fence %d from %s to %s: not higher",
				a.Lease, a.Fence, c.sec(a.Ret), b.Lease, b.Fence, c.sec(b.Ret), c.sec(b.Rel))
		}
	}
	return Pass, fmt.Sprintf("%d holders, fences %d to %d, each above the last", len(held), held[0].Fence, held[len(held)-1].Fence)
}

// staleWrite: holder A reads the wallet (a fenced Claim when the lock has
// fences, a plain read otherwise) and is paused (SIGSTOP) past its TTL;
// holder B takes the lock, spends and writes; A wakes (SIGCONT) and
// writes what it computed. PostgreSQL must refuse A's write.
func staleWrite(c *check) (Outcome, string) {
	fenced := c.r.claims["fence"]
	set := now()
	id, err := c.r.wallet(c.ctx, 100)
	if err != nil {
		return Unknown, "PostgreSQL: " + err.Error()
	}
	p, q := c.holder(), c.holder()
	ttl := 500 * time.Millisecond
	a := c.acquireMaybeFenced(p, "A", ttl, fenced)
	if !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	ra := c.call(p, order{Op: "read", Lease: "A", Wallet: id, Fenced: fenced})
	if !ra.OK {
		return Unknown, "holder A could not read the wallet: " + ra.Err
	}
	c.tl.mark(ra.Ret, who("A", p), fmt.Sprintf("read %d", ra.Balance), false)
	if err := p.prog.Pause(); err != nil {
		return Unknown, "the judge could not pause holder A: " + err.Error()
	}
	paused := now()
	c.sleep(c.jitter(2 * ttl))
	b := c.acquireMaybeFenced(q, "B", ttl*4, fenced)
	if !b.OK {
		p.prog.Resume()
		return Fail, fmt.Sprintf("holder A was paused at %s with a lease of %s, and holder B could not take the lock by %s: %s", c.sec(paused), dur(ttl), c.sec(b.Ret), b.Err)
	}
	rb := c.call(q, order{Op: "read", Lease: "B", Wallet: id, Fenced: fenced})
	wb := c.call(q, order{Op: "write", Lease: "B", Wallet: id, Fenced: fenced, Balance: rb.Balance - 10})
	c.tl.mark(wb.Ret, who("B", q), fmt.Sprintf("wrote %d", rb.Balance-10), false)
	c.release(q, "B", order{})
	if err := p.prog.Resume(); err != nil {
		return Unknown, "the judge could not wake holder A: " + err.Error()
	}
	woke := now()
	c.tl.fault(paused, woke, "holder A paused (SIGSTOP)")
	c.tl.close(who("A", p), paused+int64(ttl), "expired while paused")
	wa := c.call(p, order{Op: "write", Lease: "A", Wallet: id, Fenced: fenced, Balance: ra.Balance - 10})
	readBack := now()
	bal, err := c.r.balance(c.ctx, id)
	if err != nil {
		return Unknown, "PostgreSQL: " + err.Error()
	}
	lin := linearizable(set, readBack, 100, bal, spendOp(1, ra, wa), spendOp(2, rb, wb))
	if wa.OK {
		c.tl.mark(wa.Ret, who("A", p), fmt.Sprintf("wrote %d: one spend lost", ra.Balance-10), true)
	} else {
		c.tl.mark(wa.Ret, who("A", p), "write refused", false)
	}
	story := fmt.Sprintf("holder A (lease %s to %s) read %d and was paused for %s; holder B (lease %s to %s) read %d and wrote %d; A woke at %s",
		c.sec(ra.Call-int64(time.Millisecond)), c.sec(paused+int64(ttl)), ra.Balance, dur(time.Duration(woke-paused)), c.sec(b.Ret), c.sec(wb.Ret), rb.Balance, rb.Balance-10, c.sec(woke))
	switch {
	case !wa.OK && wa.Stale:
		return Pass, fmt.Sprintf("%s and PostgreSQL refused its write (fence %d, below B's %d); balance %d%s", story, a.Fence, b.Fence, bal, lin)
	case !wa.OK:
		return Unknown, fmt.Sprintf("%s and its write failed for another reason: %s", story, wa.Err)
	case !fenced:
		return Broken, fmt.Sprintf("the lock has no fence, so nothing stops a holder that wakes after its TTL: %s, and wrote %d over it: two spends of 10 accepted, balance %d%s", story, ra.Balance-10, bal, lin)
	}
	return Fail, fmt.Sprintf("%s and PostgreSQL accepted its fenced write of %d: two spends of 10 accepted, balance %d%s", story, ra.Balance-10, bal, lin)
}
