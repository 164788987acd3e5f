package judge

import (
	"fmt"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/drill"
	"sort"
	"strings"
	"time"
)

// The properties, in the order the judge checks them and the chapters
// that teach them.
var properties = []property{
	{id: "one-holder", step: 2, title: "at most one holder in a burst spread over 4 processes", run: oneHolder},
	{id: "killed-frees", step: 2, title: "a killed holder's lease frees within its TTL", run: killedFrees},
	{id: "release-own", step: 2, title: "a release frees its own lease at once, and only its own", run: releaseOwn},
	{id: "lost-reply", step: 2, title: "a lost reply is an unknown outcome, never \"not held\"", run: lostReply},
	{id: "ttl-refused", step: 2, title: "a TTL under 1ms is refused before any call", run: ttlRefused},
	{id: "wait-bounded", step: 2, title: "a wait is bounded by its context", run: waitBounded},
	{id: "refresh-own", step: 3, title: "refresh extends only its own lease and never re-creates an expired one", needs: "refresh", run: refreshOwn},
	{id: "watchdog-keeps", step: 3, title: "a watchdog keeps a slow holder's lease", needs: "watchdog", run: watchdogKeeps},
	{id: "work-cancelled", step: 3, title: "the work is cancelled as soon as the lease is lost", needs: "watchdog", run: workCancelled},
	{id: "fences-increase", step: 5, title: "fences strictly increase across holders", needs: "fence", run: fencesIncrease},
	{id: "stale-write", step: 5, title: "PostgreSQL refuses the write of a holder paused past its TTL", run: staleWrite},
	{id: "release-cancelled", step: 6, title: "a release sent on a cancelled context still frees the lock", run: releaseCancelled},
	{id: "lost-acquire-reply", step: 6, title: "an Acquire whose reply was lost leaves no orphan lease", run: lostAcquireReply},
	{id: "wrong-type", step: 6, title: "a key that holds something else is refused at once, not waited for", run: wrongType},
	{id: "restart-keeps", step: 4, title: "a lease outlives a restart of a Redis that keeps its data (appendonly yes)", run: restartKeeps},
	{id: "restart-empty", step: 4, title: "Redis restarted empty under a holder: the money stays right", run: restartEmpty},
	{id: "failover", step: 4, title: "a Sentinel failover to a replica that never got the lease: the money stays right", slow: true, run: drillFault(drill.Failover, "a failover")},
	{id: "partition", step: 4, title: "the primary cut off from the majority (a partition): the money stays right", slow: true, run: drillFault(drill.Partition, "a partition")},
}

// oneHolder: 4 processes of 4 goroutines each take the lock 8 times
// each, holding it a few ms; no two may hold it at once while both their
// leases surely live.
func oneHolder(c *check) (Outcome, string) {
	const procs, conc, n = 4, 4, 8
	ttl := 2 * time.Second
	var ps []*proc
	for range procs {
		ps = append(ps, c.holder())
	}
	var waits []<-chan answer
	var orders []order
	for i, p := range ps {
		o := order{Op: "burst", Lease: fmt.Sprintf("P%d", i+1), Key: c.key, TTL: ttl, Timeout: 10 * time.Second,
			N: n, Conc: conc, Hold: time.Duration(1+c.r.rng.IntN(3)) * time.Millisecond}
		orders = append(orders, o)
		waits = append(waits, p.send(o))
	}
	for i, p := range ps {
		if _, err := p.await(orders[i], waits[i], 40*time.Second); err != nil {
			return Fail, err.Error()
		}
	}
	c.mu.Lock()
	cycles := append([]answer(nil), c.cycles...)
	c.mu.Unlock()
	var held []answer
	failed := 0
	for _, a := range cycles {
		if a.OK {
			held = append(held, a)
		} else {
			failed++
		}
	}
	// A lease surely lives from the return of its Acquire until its
	// release is sent, and never past its call plus its TTL.
	end := func(a answer) int64 { return min(a.Rel, a.Call+int64(ttl)) }
	sort.Slice(held, func(i, j int) bool { return held[i].Ret < held[j].Ret })
	for i, a := range held {
		c.tl.open("holder "+a.Lease, a.Ret, "")
		c.tl.close("holder "+a.Lease, a.Rel, "")
		for _, b := range held[:i] {
			if b.Ret <= a.Ret && a.Ret < end(b) && a.Ret < end(a) {
				c.tl.bad("holder " + a.Lease)
				return Fail, fmt.Sprintf("holder %s was granted the lock at %s while holder %s held it (granted at %s, released at %s, TTL %s): two holders at once",
					a.Lease, c.sec(a.Ret), b.Lease, c.sec(b.Ret), c.sec(b.Rel), dur(ttl))
			}
		}
	}
	if len(held) == 0 {
		return Fail, fmt.Sprintf("none of the %d acquires got the lock; the first said %s", len(cycles), quote(firstErr(cycles)))
	}
	if failed > 0 {
		return Pass, fmt.Sprintf("%d leases, none overlapping; %d acquires gave up within the burst's 10s", len(held), failed)
	}
	return Pass, fmt.Sprintf("%d leases, none overlapping", len(held))
}

// killedFrees kills a holder right after each command its Acquire sends,
// one at a time, and then while it holds the lease; each time another
// holder must get the lock within the TTL.
func killedFrees(c *check) (Outcome, string) {
	ttl := 600 * time.Millisecond
	points := 0
	for k := int64(1); k <= 5; k++ {
		c.key = fmt.Sprintf("judge:killed-frees:%d:lock", k)
		a := c.holder()
		lease := string(rune('A' + 2*(k-1)))
		ans, err := a.call(order{Op: "acquire", Lease: lease, Key: c.key, TTL: ttl, Timeout: 5 * time.Second, CrashAt: k}, 8*time.Second)
		killedAt := now()
		when := ""
		switch {
		case err != nil && !c.killed(a):
			return Fail, err.Error()
		case err != nil:
			when = fmt.Sprintf("right after the %s command its Acquire sent", ordinal(k))
			c.tl.open(who(lease, a), killedAt, "killed by SIGKILL mid-Acquire")
			c.tl.close(who(lease, a), killedAt, "")
		case !ans.OK:
			return Unknown, fmt.Sprintf("holder %s could not take a free lock: %s", lease, ans.Err)
		default: // Acquire sent fewer than k commands: kill it while it holds
			c.tl.open(who(lease, a), ans.Ret, "TTL "+dur(ttl))
			c.call(a, order{Op: "disarm"}) // no crash of its own after the kill point
			a.prog.Kill(3 * time.Second)
			killedAt = now()
			c.tl.close(who(lease, a), killedAt, "killed by SIGKILL")
			when = "while it held the lease"
		}
		c.tl.fault(killedAt, killedAt, "SIGKILL "+who(lease, a))
		points++
		never := c.keysWithoutTTL()
		b := c.holder()
		next := string(rune('A' + 2*(k-1) + 1))
		got := c.acquire(b, next, ttl, 2*ttl+2*time.Second)
		if !got.OK {
			why := fmt.Sprintf("holder %s was killed (SIGKILL) at %s %s, and holder %s, trying from %s, still had no lock at %s",
				lease, c.sec(killedAt), when, next, c.sec(got.Call), c.sec(got.Ret))
			if len(never) > 0 {
				why += fmt.Sprintf(": the key %s never expires", strings.Join(never, ", "))
			}
			why += cmdsSent(a)
			return Fail, why
		}
		c.release(b, next, order{})
		if when == "while it held the lease" {
			return Pass, fmt.Sprintf("killed at %d points (after each command of Acquire, and holding); each time the next holder got the lock (the last %s after the kill, TTL %s)", points, dur(time.Duration(got.Ret-killedAt)), dur(ttl))
		}
	}
	return Pass, fmt.Sprintf("killed at %d points; each time the next holder got the lock", points)
}

// cmdsSent says what a killed holder's Acquire had sent, where the judge
// could see it; a dead process cannot tell, so it says nothing.
func cmdsSent(p *proc) string {
	for _, l := range strings.Split(p.log.String(), "\n") {
		if sent, ok := strings.CutPrefix(l, crashLine); ok {
			return "; its Acquire had sent " + safe.Line(sent)
		}
	}
	return ""
}

func ordinal(k int64) string {
	switch k {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", k)
}

// releaseOwn: a release lets the next holder in at once, long before the
// TTL; and a holder whose lease expired, releasing late, leaves the next
// holder's lease alone.
func releaseOwn(c *check) (Outcome, string) {
	long := 10 * time.Second
	p, q := c.holder(), c.holder()
	if a := c.acquire(p, "A", long, 5*time.Second); !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	rel := c.release(p, "A", order{})
	b := c.acquire(q, "B", long, 2*time.Second)
	if !b.OK {
		what := "returned no error"
		if !rel.OK {
			what = "returned " + quote(rel.Err)
		}
		return Fail, fmt.Sprintf("holder A released at %s (Release %s), and holder B, trying from %s with a free lock expected, still had none at %s: A's lease stays until its TTL of %s runs out",
			c.sec(rel.Call), what, c.sec(b.Call), c.sec(b.Ret), dur(long))
	}
	c.release(q, "B", order{})

	// A's lease lapses; B takes the lock; A releases late.
	c.key = "judge:release-own:late:lock"
	short := 300 * time.Millisecond
	a := c.acquire(p, "C", short, 5*time.Second)
	if !a.OK {
		return Fail, "holder C could not take a free lock: " + a.Err
	}
	c.sleep(c.jitter(2 * short))
	c.lapse(p, "C", a.Call+int64(short))
	d := c.acquire(q, "D", long, 3*time.Second)
	if !d.OK {
		return Fail, fmt.Sprintf("holder C's lease (TTL %s) should have expired at %s, and holder D could not take the lock by %s: %s", dur(short), c.sec(a.Call+int64(short)), c.sec(d.Ret), d.Err)
	}
	late := c.call(p, order{Op: "release", Lease: "C"})
	c.tl.mark(late.Call, who("C", p), "late release", false)
	r := c.holder()
	e := c.acquire(r, "E", long, 500*time.Millisecond)
	if e.OK {
		c.tl.mark(late.Ret, who("D", q), "lease gone: C's late release deleted it", true)
		c.tl.mark(e.Ret, who("E", r), "granted while D held the lock", true)
		c.tl.bad(who("E", r))
		return Fail, fmt.Sprintf("holder C's late release at %s, after its lease expired at %s, deleted holder D's lease (held from %s, TTL %s): holder E got the lock at %s while D still held it",
			c.sec(late.Call), c.sec(a.Call+int64(short)), c.sec(d.Ret), dur(long), c.sec(e.Ret))
	}
	c.release(q, "D", order{})
	return Pass, "the next holder got the lock at once after a release; a late release left the next holder's lease alone"
}

// lostReply: a release whose reply is lost (it ran, the answer never
// came) must end with an error that is not "not held": the caller cannot
// know, and "not held" tells it, wrongly, that its lease was gone.
func lostReply(c *check) (Outcome, string) {
	p := c.holder()
	if a := c.acquire(p, "A", 10*time.Second, 5*time.Second); !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	rel := c.release(p, "A", order{Lose: true})
	c.tl.mark(rel.Ret, who("A", p), "release's reply lost", false)
	switch {
	case !rel.Lost:
		return Unknown, fmt.Sprintf("no command of the lock's Release ran through the judge's go-redis client (it answered %s), so the judge could lose no reply", quote(rel.Err))
	case rel.NotHeld:
		c.tl.bad(who("A", p))
		return Fail, fmt.Sprintf("holder A's release at %s ran (%s) but its reply was lost, and Release answered %s: the caller now believes its lease had lapsed before it released, which nobody knows",
			c.sec(rel.Call), strings.Join(rel.Cmds, ", "), quote(rel.Err))
	case rel.OK:
		return Pass, "the reply was lost, and Release asked again and found out"
	}
	return Pass, "Release answered " + quote(rel.Err) + ", an unknown outcome"
}

// ttlRefused: Acquire with a TTL of 0, of half a millisecond or negative
// must fail before it sends anything.
func ttlRefused(c *check) (Outcome, string) {
	p := c.holder()
	for i, ttl := range []time.Duration{0, 500 * time.Microsecond, -time.Second} {
		c.key = fmt.Sprintf("judge:ttl-refused:%d:lock", i)
		lease := string(rune('A' + i))
		a := c.acquire(p, lease, ttl, time.Second)
		if a.OK {
			c.tl.bad(who(lease, p))
			why := fmt.Sprintf("Acquire with a TTL of %s was not refused: it sent %s and returned a lease", ttl, sentOrNothing(a.Cmds))
			if never := c.keysWithoutTTL(); len(never) > 0 {
				why += fmt.Sprintf("; the key %s never expires, so a holder that dies now blocks every other for good", strings.Join(never, ", "))
			} else if b := c.acquire(c.holder(), "Z", time.Second, 300*time.Millisecond); b.OK {
				why += fmt.Sprintf(", and another holder got the lock too, at %s: the lease held nothing", c.sec(b.Ret))
			}
			c.release(p, lease, order{})
			return Fail, why
		}
		if len(a.Cmds) > 0 {
			why := fmt.Sprintf("Acquire with a TTL of %s was refused only after it sent %s", ttl, sentOrNothing(a.Cmds))
			for _, cmd := range a.Cmds {
				if strings.HasPrefix(cmd, "SET ") && !strings.Contains(cmd, " PX") && !strings.Contains(cmd, " EX") {
					why += "; a SET with no expiry among them: a holder that dies before its clean-up leaves a key that never expires"
					break
				}
			}
			return Fail, why
		}
	}
	return Pass, "0, 500µs and -1s refused, with no command sent"
}

// sentOrNothing lists the first commands a call sent.
func sentOrNothing(cmds []string) string {
	switch n := len(cmds); {
	case n == 0:
		return "nothing the judge could see"
	case n > 4:
		return fmt.Sprintf("%s and %d more", strings.Join(cmds[:4], ", "), n-4)
	}
	return strings.Join(cmds, ", ")
}

// waitBounded: a waiter given a short context returns, with an error,
// soon after the context ends.
func waitBounded(c *check) (Outcome, string) {
	p, q := c.holder(), c.holder()
	if a := c.acquire(p, "A", 10*time.Second, 5*time.Second); !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	wait := 300 * time.Millisecond
	b, err := q.call(order{Op: "acquire", Lease: "B", Key: c.key, TTL: 10 * time.Second, Timeout: wait}, wait+3*time.Second)
	if err != nil {
		return Fail, fmt.Sprintf("holder B's Acquire, with a context of %s while holder A held the lock, %s", dur(wait), strings.TrimPrefix(err.Error(), errNoReturn.Error()+": "))
	}
	c.release(p, "A", order{})
	if b.OK {
		c.tl.open(who("B", q), b.Ret, "")
		c.tl.bad(who("B", q))
		return Fail, fmt.Sprintf("holder B's Acquire, with a context of %s, returned a lease at %s while holder A held the lock", dur(wait), c.sec(b.Ret))
	}
	return Pass, fmt.Sprintf("a context of %s: Acquire gave up after %s", dur(wait), dur(time.Duration(b.Ret-b.Call)))
}

// firstErr is the first error of a burst's cycles.
func firstErr(cycles []answer) string {
	for _, a := range cycles {
		if a.Err != "" {
			return a.Err
		}
	}
	return "nothing"
}

func quote(s string) string { return "\"" + s + "\"" }
