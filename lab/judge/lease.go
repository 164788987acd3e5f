package judge

// The lease chapter: the article's step 2.

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"example.com/walletlock/lab/internal/wire"
)

// cycle is one acquire-hold-release of a burst.
type cycle struct {
	p              *proc
	lease          string
	call, ret, rel int64
	ok             bool
	err            string
	fence          int64
}

// burst has holders take the lock on the check's key over and over, 128
// leases in all, each holding it hold; fenced takes fenced leases. A
// holder that answers several requests at once runs four lanes; another
// runs one, and the burst starts more holders. It stops starting leases
// after 10 s.
func (c *check) burst(ttl time.Duration, fenced bool) ([]cycle, error) {
	procs, lanes := 4, 4
	if !c.r.concurrent {
		procs, lanes = 8, 1
	}
	n := 128 / (procs * lanes)
	if fenced {
		n /= 2
	}
	var ps []*proc
	for range procs {
		ps = append(ps, c.holder())
	}
	deadline := time.Now().Add(10 * time.Second)
	var (
		mu     sync.Mutex
		cycles []cycle
		dead   error
		wg     sync.WaitGroup
	)
	for _, p := range ps {
		for lane := range lanes {
			hold := time.Duration(1+c.r.rng.IntN(3)) * time.Millisecond
			wg.Go(func() {
				for i := range n {
					wait := time.Until(deadline)
					if wait <= 0 {
						return
					}
					q := request{Op: "acquire", Lease: fmt.Sprintf("%s.%d.%d", p.name, lane, i), Key: c.key, TTL: ms(ttl), Wait: ms(wait), Fenced: fenced}
					ch, call := p.send(q)
					a, err := p.await(q, ch, call, wait+3*time.Second)
					cy := cycle{p: p, lease: q.Lease, call: call, ret: a.ret, ok: a.OK, err: a.Error, fence: a.Fence}
					if err == nil && a.OK {
						time.Sleep(hold)
						r := request{Op: "release", Lease: q.Lease, Wait: 5000}
						rch, rcall := p.send(r)
						cy.rel = rcall
						var ra answer
						if ra, err = p.await(r, rch, rcall, 8*time.Second); err == nil && !ra.OK {
							cy.err = "release: " + ra.Error
						}
					}
					mu.Lock()
					if err != nil {
						dead = err
					} else {
						cycles = append(cycles, cy)
					}
					mu.Unlock()
					if err != nil {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	sort.Slice(cycles, func(i, j int) bool { return cycles[i].ret < cycles[j].ret })
	for _, cy := range cycles {
		if cy.ok {
			label := ""
			if cy.fence > 0 {
				label = fmt.Sprintf("fence %d", cy.fence)
			}
			c.tl.open(cy.p.row(), cy.ret, label)
			c.tl.close(cy.p.row(), cy.rel, "")
		}
	}
	return cycles, dead
}

// firstErr is the first error of a burst's cycles.
func firstErr(cycles []cycle) string {
	for _, cy := range cycles {
		if cy.err != "" {
			return cy.err
		}
	}
	return "nothing"
}

// oneHolder: a burst in which no two holders may hold the lock at once
// while both their leases surely live; then Acquire stopped at each of
// its pause points while another holder takes the lock.
func oneHolder(c *check) (string, string, string) {
	ttl := 2 * time.Second
	cycles, err := c.burst(ttl, false)
	if err != nil {
		return fail, strings.TrimPrefix(err.Error(), errNoReturn.Error()+": "), crashFix(err.Error())
	}
	var held []cycle
	for _, cy := range cycles {
		if cy.ok {
			held = append(held, cy)
		}
	}
	if len(held) == 0 {
		return fail, fmt.Sprintf("none of the %d acquires got the lock; the first said %s", len(cycles), quote(firstErr(cycles))), ""
	}
	// A lease surely lives from the return of its Acquire until its
	// release is sent, and never past its call plus its TTL.
	end := func(a cycle) int64 { return min(a.rel, a.call+int64(ttl)) }
	for i, a := range held {
		for _, b := range held[:i] {
			if b.ret <= a.ret && a.ret < end(b) && a.ret < end(a) {
				c.tl.bad(a.p.row())
				other := "holder " + b.p.name
				if b.p == a.p {
					other = "another of holder " + b.p.name + "'s calls"
				}
				return fail, fmt.Sprintf("holder %s was granted the lock at %s while %s held it (granted at %s, released at %s, TTL %s): two holders at once",
					a.p.name, c.sec(a.ret), other, c.sec(b.ret), c.sec(b.rel), dur(ttl)), fixSameTime
			}
		}
	}
	burst := fmt.Sprintf("%d leases in a burst, none overlapping", len(held))
	if failed := len(cycles) - len(held); failed > 0 {
		burst += fmt.Sprintf(" (%d acquires gave up within its 10s)", failed)
	}

	a, b, e := c.procs[0], c.procs[1], c.procs[2]
	var g answer
	cmds := c.learn(a, func() {}, func() { g = c.acquire(a, ttl, 2*time.Second, false) }, func() {
		if g.OK {
			c.release(a, g, request{})
		}
	})
	o, why, fix, clause := c.everyPoint("Acquire", cmds, func(pt point, cmds []wire.Command) (string, string, string, bool) {
		ttl := 250 * time.Millisecond
		a.leases++
		q := request{Op: "acquire", Lease: fmt.Sprintf("%s%d", a.name, a.leases), TTL: ms(ttl), Wait: 2000}
		pd, _, struck, early := c.strike(a, pt, q)
		if !struck {
			if early.OK {
				c.release(a, early, request{})
			}
			return pass, "", "", false
		}
		from := now()
		c.pastTTL(from, ttl)
		gb := c.acquire(b, 10*time.Second, time.Second, false)
		c.goOn(a, from, "Acquire", pt, cmds)
		ga := c.wait(pd)
		c.sleep(60 * time.Millisecond) // a beat, for the drawing
		defer func() {
			if ga.OK {
				c.drawLease(a, ga, ttl)
				c.release(a, ga, request{})
			}
		}()
		if !ga.OK || !gb.OK {
			if gb.OK {
				c.release(b, gb, request{})
			}
			return pass, "", "", true
		}
		story := fmt.Sprintf("holder A's Acquire sent %s; the judge %s, for %s, past the TTL of %s it asked for, and holder B took the lock at %s; A went on and its Acquire returned a lease at %s",
			names(cmds), pt.where(cmds), dur(time.Duration(ga.ret-from)), dur(ttl), c.sec(gb.ret), c.sec(ga.ret))
		ge := c.acquire(e, 10*time.Second, 300*time.Millisecond, false)
		rb := c.release(b, gb, request{})
		switch {
		case ge.OK:
			c.release(e, ge, request{})
			c.tl.bad(e.row())
			return fail, story + fmt.Sprintf(", and holder C got the lock at %s while B held it (TTL 10s)", c.sec(ge.ret)), checkThenAct("Acquire", cmds), true
		case rb.NotHeld:
			c.tl.mark(rb.ret, b.row(), "lease gone", true)
			return fail, story + fmt.Sprintf("; B's release at %s answered %s: its lease (TTL 10s) was taken from it", c.sec(rb.call), quote(rb.Error)), checkThenAct("Acquire", cmds), true
		}
		return pass, "", "", true
	})
	if o != pass {
		return o, why, fix
	}
	return pass, burst + "; " + clause, ""
}

// killedFrees kills a holder right after each command its Acquire sends,
// one at a time, and then while it holds the lease; each time another
// holder must get the lock within the TTL.
func killedFrees(c *check) (string, string, string) {
	ttl := 600 * time.Millisecond
	points := 0
	for k := 1; k <= 5; k++ {
		c.newKey()
		a := c.holder()
		a.leases++
		q := request{Op: "acquire", Lease: a.name + "1", TTL: ms(ttl), Wait: 5000}
		_, at, struck, early := c.strike(a, point{wire.KillAfter, k}, q)
		var when string
		var killedAt int64
		if struck {
			a.prog.Kill(3 * time.Second)
			killedAt = now()
			when = fmt.Sprintf("right after %s, the %s command its Acquire sent", at, ordinal(k))
			c.tl.open(a.row(), killedAt, "killed mid-Acquire")
			c.tl.close(a.row(), killedAt, "")
		} else {
			if !early.OK {
				return unknown, fmt.Sprintf("holder %s could not take a free lock: %s", a.name, early.Error), ""
			}
			c.drawLease(a, early, ttl)
			a.prog.Kill(3 * time.Second)
			killedAt = now()
			c.tl.close(a.row(), killedAt, "killed")
			when = "while it held the lease"
		}
		c.tl.fault(killedAt, killedAt, "SIGKILL holder "+a.name)
		points++
		never := c.keysWithoutTTL()
		b := c.holder()
		got := c.acquire(b, ttl, 2*ttl+2*time.Second, false)
		if !got.OK {
			why := fmt.Sprintf("holder %s was killed at %s %s, and holder %s, trying from %s, still had no lock at %s",
				a.name, c.sec(killedAt), when, b.name, c.sec(got.call), c.sec(got.ret))
			fix := ""
			if len(never) > 0 {
				why += fmt.Sprintf(": the key %s never expires", strings.Join(never, ", "))
				fix = fixNoExpiry
			}
			return fail, why + "; its Acquire had sent " + sent(a), fix
		}
		c.release(b, got, request{})
		if !struck {
			return pass, fmt.Sprintf("killed at %d points (after each command of Acquire, and holding); each time the next holder got the lock (the last %s after the kill, TTL %s)", points, dur(time.Duration(got.ret-killedAt)), dur(ttl)), ""
		}
	}
	return pass, fmt.Sprintf("killed at %d points; each time the next holder got the lock", points), ""
}

// releaseOwn: a release lets the next holder in at once, long before the
// TTL; a holder whose lease expired, releasing late, leaves the next
// holder's lease alone; and so does a Release stopped at any of its pause
// points past its TTL.
func releaseOwn(c *check) (string, string, string) {
	long := 10 * time.Second
	a, b := c.holder(), c.holder()
	ga := c.acquire(a, long, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	rel := c.release(a, ga, request{})
	gb := c.acquire(b, long, 2*time.Second, false)
	if !gb.OK {
		what, fix := "returned no error", "Release must delete the key while it holds your token"
		if !rel.OK {
			what = "returned " + quote(rel.Error)
		}
		if strings.Contains(rel.Error, "context canceled") {
			fix = fixCancelled
		}
		return fail, fmt.Sprintf("holder A released at %s (Release %s; it sent %s), and holder B, trying from %s with a free lock expected, still had none at %s: A's lease stays until its TTL of %s runs out",
			c.sec(rel.call), what, sent(a), c.sec(gb.call), c.sec(gb.ret), dur(long)), fix
	}
	c.release(b, gb, request{})

	// A stands still, as a paused process does, and its lease lapses; B
	// takes the lock; A releases late. Standing still is at the wire: a
	// lock that renews its lease by itself from Acquire on (rueidislock)
	// sends nothing either, and its lease lapses too.
	c.newKey()
	short := 300 * time.Millisecond
	ga = c.acquire(a, short, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	stood := now()
	a.wire.Freeze()
	c.sleep(c.jitter(2 * short))
	c.lapse(a, ga.call+int64(short))
	gb = c.acquire(b, long, 3*time.Second, false)
	a.wire.Thaw()
	c.tl.fault(stood, now(), "holder A stood still")
	if !gb.OK {
		return fail, fmt.Sprintf("holder A's lease (TTL %s) should have expired at %s, with A standing still, and holder B could not take the lock by %s: %s", dur(short), c.sec(ga.call+int64(short)), c.sec(gb.ret), gb.Error), ""
	}
	late := c.call(a, request{Op: "release", Lease: ga.Lease})
	c.tl.mark(late.call, a.row(), "late release", false)
	e := c.holder()
	ge := c.acquire(e, long, 500*time.Millisecond, false)
	if ge.OK {
		c.tl.mark(late.ret, b.row(), "lease gone", true)
		c.tl.bad(e.row())
		return fail, fmt.Sprintf("holder A's late release at %s, after its lease expired at %s, deleted holder B's lease (held from %s, TTL %s): holder C got the lock at %s while B still held it",
			c.sec(late.call), c.sec(ga.call+int64(short)), c.sec(gb.ret), dur(long), c.sec(ge.ret)), fixDelNoToken
	}
	c.release(b, gb, request{})

	var g answer
	cmds := c.learn(a, func() { g = c.acquire(a, long, 2*time.Second, false) }, func() { c.release(a, g, request{}) }, func() {})
	o, why, fix, clause := c.everyPoint("Release", cmds, func(pt point, cmds []wire.Command) (string, string, string, bool) {
		ttl := 250 * time.Millisecond
		ga := c.acquire(a, ttl, 2*time.Second, false)
		if !ga.OK {
			return unknown, "holder A could not take a free lock: " + ga.Error, "", true
		}
		pd, _, struck, early := c.strike(a, pt, request{Op: "release", Lease: ga.Lease})
		if !struck {
			c.tl.close(a.row(), early.call, "released")
			return pass, "", "", false
		}
		from := now()
		c.pastTTL(ga.ret, ttl)
		c.lapse(a, ga.ret+int64(ttl))
		gb := c.acquire(b, long, 2*time.Second, false)
		c.goOn(a, from, "Release", pt, cmds)
		rel := c.wait(pd)
		c.sleep(60 * time.Millisecond) // a beat, for the drawing
		c.tl.mark(rel.ret, a.row(), "Release returned", false)
		if !gb.OK {
			return fail, fmt.Sprintf("holder A stood in its Release (the judge %s), past its lease's TTL of %s, and holder B could not take the lock by %s: %s", pt.where(cmds), dur(ttl), c.sec(gb.ret), gb.Error), "", true
		}
		story := fmt.Sprintf("holder A's Release sent %s; the judge %s, for %s, past its lease's TTL of %s, and holder B took the lock at %s; A went on at %s",
			names(cmds), pt.where(cmds), dur(time.Duration(rel.ret-from)), dur(ttl), c.sec(gb.ret), c.sec(rel.ret))
		ge := c.acquire(e, long, 300*time.Millisecond, false)
		rb := c.release(b, gb, request{})
		switch {
		case ge.OK:
			c.release(e, ge, request{})
			c.tl.bad(e.row())
			c.tl.mark(rel.ret, b.row(), "lease gone: A's Release deleted it", true)
			return fail, story + fmt.Sprintf(" and deleted B's lease: holder C got the lock at %s while B held it (TTL %s)", c.sec(ge.ret), dur(long)), checkThenAct("Release", cmds), true
		case rb.NotHeld:
			c.tl.mark(rb.ret, b.row(), "lease gone", true)
			return fail, story + fmt.Sprintf(", and B's release at %s answered %s: A's Release took B's lease", c.sec(rb.call), quote(rb.Error)), checkThenAct("Release", cmds), true
		}
		return pass, "", "", true
	})
	if o != pass {
		return o, why, fix
	}
	return pass, "the next holder got the lock at once after a release; a late release left the next holder's lease alone; " + clause, ""
}

// lostReply: a Release whose reply is lost (it ran, the answer never
// came), each of its replies in turn, must end with an error that is not
// "not held": the caller cannot know, and "not held" tells it, wrongly,
// that its lease was gone.
func lostReply(c *check) (string, string, string) {
	a := c.holder()
	var g answer
	cmds := c.learn(a, func() { g = c.acquire(a, 10*time.Second, 2*time.Second, false) }, func() { c.release(a, g, request{}) }, func() {})
	var said []string
	for k := 1; k <= len(cmds); k++ {
		c.newKey()
		g := c.acquire(a, 10*time.Second, 2*time.Second, false)
		if !g.OK {
			return unknown, "holder A could not take a free lock: " + g.Error, ""
		}
		pd, at, struck, _ := c.strike(a, point{wire.LoseReply, k}, request{Op: "release", Lease: g.Lease})
		if !struck {
			continue
		}
		rel := c.wait(pd)
		c.tl.close(a.row(), rel.call, "release's reply lost")
		if rel.NotHeld {
			c.tl.mark(rel.ret, a.row(), "answered not held", true)
			return fail, fmt.Sprintf("holder A's Release ran (it sent %s) but the reply of %s was lost, and Release answered %s: the caller now believes its lease had lapsed before it released, which nobody knows",
				names(cmds), at, quote(rel.Error)), fixLostNotHeld
		}
		if rel.OK {
			said = append(said, "success (it asked again)")
		} else {
			said = append(said, quote(rel.Error))
		}
	}
	if len(said) == 0 {
		return unknown, "Release sent no command whose reply the judge could lose", ""
	}
	return pass, fmt.Sprintf("the reply of each of Release's %s lost in turn (%d of them reached), it answered %s: an unknown outcome%s, never \"not held\"",
		plural(len(cmds), "command"), len(said), strings.Join(said, "; "), c.r.gloss("unknown outcome", " (the caller cannot tell whether the release happened)")), ""
}

// ttlRefused: Acquire, AcquireFenced, Refresh and Watch with a TTL of 0,
// of half a millisecond or negative must refuse it before sending
// anything (Watch: cancel the work at once).
func ttlRefused(c *check) (string, string, string) {
	a := c.holder()
	var calls []string
	for _, ttl := range []time.Duration{0, 500 * time.Microsecond, -time.Second} {
		for _, call := range []string{"Acquire", "AcquireFenced", "Refresh", "Watch"} {
			if call == "AcquireFenced" && !c.r.can["fence"] || call == "Refresh" && !c.r.can["refresh"] || call == "Watch" && !c.r.can["watch"] {
				continue
			}
			if ttl == 0 {
				calls = append(calls, call)
			}
			c.newKey()
			var lease answer
			if call == "Refresh" || call == "Watch" {
				if lease = c.acquire(a, 10*time.Second, 2*time.Second, false); !lease.OK {
					return unknown, "holder A could not take a free lock: " + lease.Error, ""
				}
			}
			a.wire.Arm(wire.None, 0)
			var got answer
			switch call {
			case "Acquire", "AcquireFenced":
				a.leases++
				got = c.call(a, request{Op: "acquire", Lease: fmt.Sprintf("%s%d", a.name, a.leases), TTL: ms(ttl), Wait: 1000, Fenced: call == "AcquireFenced"})
			case "Refresh":
				got = c.call(a, request{Op: "refresh", Lease: lease.Lease, TTL: ms(ttl), Wait: 1000})
			case "Watch":
				got = c.call(a, request{Op: "watch", Lease: lease.Lease, TTL: ms(ttl)})
				if got.OK {
					if _, lost := c.awaitLost(lease.Lease, time.Second); !lost {
						c.call(a, request{Op: "stop", Lease: lease.Lease})
						c.release(a, lease, request{})
						return fail, fmt.Sprintf("Watch with a TTL of %s started, and the work was still running a second later: the watchdog never said the TTL was wrong", ttl), fixBadTTL
					}
					got.OK = false // the work was cancelled: refused
				}
			}
			cmds := a.wire.Log()
			if lease.OK {
				c.call(a, request{Op: "stop", Lease: lease.Lease})
				c.release(a, lease, request{})
			}
			if got.OK {
				c.drawLease(a, got, ttl)
				c.tl.bad(a.row())
				why := fmt.Sprintf("%s with a TTL of %s was not refused: it sent %s and returned success", call, ttl, sentOrNothing(cmds))
				if never := c.keysWithoutTTL(); len(never) > 0 {
					why += fmt.Sprintf("; the key %s never expires, so a holder that dies now blocks every other for good", strings.Join(never, ", "))
				}
				if strings.HasPrefix(call, "Acquire") {
					c.release(a, got, request{})
				}
				return fail, why, fixBadTTL
			}
			if len(cmds) > 0 {
				return fail, fmt.Sprintf("%s with a TTL of %s was refused only after it sent %s", call, ttl, sentOrNothing(cmds)), fixBadTTL
			}
		}
	}
	return pass, fmt.Sprintf("0, 500µs and -1s refused by %s, with no command sent", strings.Join(calls, ", ")), ""
}

// sentOrNothing lists commands for a sentence.
func sentOrNothing(cmds []wire.Command) string {
	var s []string
	for _, c := range cmds {
		s = append(s, c.String())
	}
	switch n := len(s); {
	case n == 0:
		return "nothing"
	case n > 4:
		return fmt.Sprintf("%s and %d more", strings.Join(s[:4], ", "), n-4)
	}
	return strings.Join(s, ", ")
}

// waitBounded: a waiter given a short context returns, with an error,
// soon after the context ends.
func waitBounded(c *check) (string, string, string) {
	a, b := c.holder(), c.holder()
	ga := c.acquire(a, 10*time.Second, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	wait := 300 * time.Millisecond
	q := c.fill(request{Op: "acquire", Lease: "B1", TTL: 10_000, Wait: ms(wait)})
	ch, call := b.send(q)
	gb, err := b.await(q, ch, call, wait+3*time.Second)
	if err != nil {
		return fail, fmt.Sprintf("holder B's Acquire, with a context of %s while holder A held the lock, %s", dur(wait), strings.TrimPrefix(err.Error(), errNoReturn.Error()+": ")), fixUnbounded
	}
	c.release(a, ga, request{})
	if gb.OK {
		c.drawLease(b, gb, 10*time.Second)
		c.tl.bad(b.row())
		return fail, fmt.Sprintf("holder B's Acquire, with a context of %s, returned a lease at %s while holder A held the lock", dur(wait), c.sec(gb.ret)), fixSameTime
	}
	return pass, fmt.Sprintf("a context of %s: Acquire gave up after %s", dur(wait), dur(time.Duration(gb.ret-gb.call))), ""
}
