package judge

// Pause points: every boundary of an operation. The judge learns the
// commands an operation sends, then runs the property's scenario again
// with the holder stopped after each command's reply and before the next
// one (at the wire: the proxy holds every command the holder sends after
// command k), and with each command's reply held back, past the lease's
// TTL, while another holder takes the lock.

import (
	"fmt"
	"strings"
	"time"

	"example.com/walletlock/lab/internal/holder"
	"example.com/walletlock/lab/internal/wire"
)

// point is a place in an operation where the judge strikes.
type point struct {
	fault wire.Fault // wire.PauseAfter or wire.HoldReply
	k     int        // after command k; command k's reply
}

// points are an operation's boundaries, for the n commands it sent: a
// pause between each two, and each reply held back.
func points(n int) []point {
	var pts []point
	for k := 1; k < n; k++ {
		pts = append(pts, point{wire.PauseAfter, k})
	}
	for k := 1; k <= n; k++ {
		pts = append(pts, point{wire.HoldReply, k})
	}
	return pts
}

// where says what the judge did to an operation that sent cmds: "stopped
// it after its 1st command (GET judge:x) and before its 2nd (DEL
// judge:x)", "held back the reply of its 1st command (EVALSHA on
// judge:x)".
func (pt point) where(cmds []wire.Command) string {
	name := func(k int) string { // its name and key: the arguments were the learning run's
		if k < 1 || k > len(cmds) {
			return "?"
		}
		if c := cmds[k-1]; len(c.Args) > 0 && !strings.HasPrefix(c.Name, "EVAL") {
			return c.Name + " " + c.Args[0]
		}
		return cmds[k-1].String()
	}
	if pt.fault == wire.PauseAfter {
		return fmt.Sprintf("stopped it after its %s command (%s) and before its %s (%s)", ordinal(pt.k), name(pt.k), ordinal(pt.k+1), name(pt.k+1))
	}
	return fmt.Sprintf("held back the reply of its %s command (%s)", ordinal(pt.k), name(pt.k))
}

// names lists the commands' names: "GET, DEL".
func names(cmds []wire.Command) string {
	var n []string
	for _, c := range cmds {
		n = append(n, c.Name)
	}
	return strings.Join(n, ", ")
}

// learn runs an operation twice, the second time with every script it
// uses cached in Redis, and returns the commands p sent the second time:
// setup runs first each time, unwatched, then op, then undo.
func (c *check) learn(p *proc, setup, op, undo func()) []wire.Command {
	var cmds []wire.Command
	for range 2 {
		c.newKey()
		setup()
		p.wire.Arm(wire.None, 0)
		op()
		cmds = p.wire.Log()
		undo()
	}
	return cmds
}

// pending is a request sent and not answered yet.
type pending struct {
	p    *proc
	q    request
	ch   <-chan holder.Answer
	call int64
}

// wait waits for the answer, as call does.
func (c *check) wait(pd pending) answer { return c.await(pd.p, pd.q, pd.ch, pd.call) }

// strike arms p's proxy with pt and sends q. It returns once the fault
// struck, with the command it struck at; or, when the operation ended
// first (it sent fewer commands this time), with its answer.
func (c *check) strike(p *proc, pt point, q request) (pd pending, at wire.Command, struck bool, early answer) {
	q = c.fill(q)
	p.wire.Arm(pt.fault, pt.k)
	ch, call := p.send(q)
	pd = pending{p, q, ch, call}
	t := time.NewTimer(fromMS(q.Wait) + 3*time.Second)
	defer t.Stop()
	select {
	case cmd, ok := <-p.wire.Struck():
		if ok {
			return pd, cmd, true, answer{}
		}
		return pd, wire.Command{}, false, c.wait(pd)
	case a := <-ch:
		select { // a lost reply ends the operation at once: both may be ready
		case cmd, ok := <-p.wire.Struck():
			if ok {
				again := make(chan holder.Answer, 1)
				again <- a
				pd.ch = again
				return pd, cmd, true, answer{}
			}
		default:
		}
		p.wire.Arm(wire.None, 0)
		return pd, wire.Command{}, false, answer{Answer: a, call: call, ret: a.At}
	case <-t.C:
		return pd, wire.Command{}, false, c.wait(pd) // did not return: c.wait says so
	case <-c.ctx.Done():
		panic(noReturn{c.ctx.Err()})
	}
}

// goOn lets a struck holder continue, and draws how long it stood: a
// beat later than the other holder's grant, and followed by a beat, so
// that the drawing shows one thing after the other.
func (c *check) goOn(p *proc, from int64, op string, pt point, cmds []wire.Command) {
	c.sleep(60 * time.Millisecond)
	p.wire.Resume()
	c.tl.fault(from, now(), fmt.Sprintf("the judge %s (holder %s's %s)", pt.where(cmds), p.name, op))
}

// trialFn is one scenario at one point: its outcome, and whether the
// point was reached at all.
type trialFn func(pt point, cmds []wire.Command) (o, why, fix string, reached bool)

// everyPoint runs trial at each point of an operation that sent cmds;
// the first one that does not pass is the verdict. It returns pass, and a
// clause for the property's sentence, when none broke it.
func (c *check) everyPoint(op string, cmds []wire.Command, trial trialFn) (o, why, fix, clause string) {
	tried := 0
	base := c.tl
	defer func() {
		if o == pass {
			c.tl = base // the drawing of a pass is the check's first scenario
		}
	}()
	for _, pt := range points(len(cmds)) {
		c.newKey()
		c.tl = &timeline{Start: now()} // a failure is drawn alone, from the point's start
		o, why, fix, reached := trial(pt, cmds)
		if o != pass {
			return o, why, fix, ""
		}
		if reached {
			tried++
		}
	}
	n := len(cmds)
	clause = fmt.Sprintf("%s sent %s (%s): with its reply held back past the TTL, it broke nothing", op, plural(n, "command"), names(cmds))
	if n > 1 {
		clause = fmt.Sprintf("%s sent %s (%s): stopped between each two of them, and with each reply held back, past the TTL, it broke nothing", op, plural(n, "command"), names(cmds))
	}
	if tried < 2*n-1 {
		clause += fmt.Sprintf(" (%d of its %d points reached: it sent fewer commands when stopped)", tried, 2*n-1)
	}
	return pass, "", "", clause
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// pastTTL waits until a lease of ttl, whose last command ran by at, has
// surely run out: its TTL and a quarter more (drawn from the seed).
func (c *check) pastTTL(at int64, ttl time.Duration) {
	c.until(at + int64(c.jitter(ttl+ttl/4)))
}
