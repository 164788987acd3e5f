package judge

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/launch"
)

// errNoReturn is what a call to a holder ends with when the lock did not
// answer in time, or the holder process died with the call in flight.
var errNoReturn = errors.New("judge: did not return")

// proc is one holder process, seen from the judge.
type proc struct {
	n    int
	prog *launch.Program
	log  launch.Log // its stderr

	mu     sync.Mutex
	next   int64
	waits  map[int64]chan answer
	events func(answer)
	ended  chan struct{} // its stdout read to the end
	wmu    sync.Mutex

	quitErr error // what quit found
}

// startHolder starts holder process n.
func (c *check) startHolder() (*proc, error) {
	c.procN++
	p := &proc{n: c.procN, waits: map[int64]chan answer{}, ended: make(chan struct{}), events: c.event}
	cfg, _ := json.Marshal(holderConfig{Lock: c.r.adapter.Name, Redis: c.redis.Addr, Owner: c.r.owner})
	cmd := exec.Command(c.r.exe, c.r.args...)
	cmd.Env = append(cmd.Environ(), holderEnv+"="+string(cfg))
	cmd.Stderr = &p.log
	prog, err := c.r.procs.StartProgram(fmt.Sprintf("holder process %d", p.n), cmd)
	if err != nil {
		return nil, err
	}
	p.prog = prog
	go p.read()
	c.procs = append(c.procs, p)
	return p, nil
}

func (p *proc) read() {
	defer close(p.ended)
	defer p.prog.Stdout.Close()
	sc := bufio.NewScanner(p.prog.Stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var a answer
		if json.Unmarshal(sc.Bytes(), &a) != nil {
			continue // a line the test framework printed
		}
		if a.Ev != "" {
			p.events(a)
			continue
		}
		p.mu.Lock()
		ch := p.waits[a.ID]
		delete(p.waits, a.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// send gives the holder an order and returns where its answer will come.
func (p *proc) send(o order) <-chan answer {
	ch := make(chan answer, 1)
	p.mu.Lock()
	p.next++
	o.ID = p.next
	p.waits[o.ID] = ch
	p.mu.Unlock()
	b, _ := json.Marshal(o)
	p.wmu.Lock()
	p.prog.Stdin.Write(append(b, '\n'))
	p.wmu.Unlock()
	return ch
}

// call sends an order and waits for its answer, at most within. When the
// answer does not come, the holder process is killed and the error says
// what happened: the lock did not return, or the process died (a panic,
// or a crash the judge ordered).
func (p *proc) call(o order, within time.Duration) (answer, error) {
	return p.await(o, p.send(o), within)
}

func (p *proc) await(o order, ch <-chan answer, within time.Duration) (answer, error) {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-p.prog.Exited():
		// Its last lines may still be in the pipe: read them all first.
		select {
		case <-p.ended:
		case <-time.After(3 * time.Second):
		}
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return answer{}, fmt.Errorf("%w: holder process %d died during %s (%s)%s", errNoReturn, p.n, o.Op, p.prog.State(), p.why())
	case <-t.C:
		p.prog.Kill(3 * time.Second)
		return answer{}, fmt.Errorf("%w: %s did not return within %v; the judge killed holder process %d", errNoReturn, o.Op, within.Round(time.Millisecond), p.n)
	}
}

// why is the last line the process wrote on stderr (a panic's message),
// ready to follow a sentence.
func (p *proc) why() string {
	s := strings.TrimSpace(p.log.String())
	if s == "" {
		return ""
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return ": " + safe.Line(l)
		}
	}
	return ": " + safe.Line(p.log.LastLine())
}

// quit asks the holder to end, and reports what it left running. It kills
// the process if it does not end within a few seconds.
func (p *proc) quit() error {
	defer p.prog.Kill(3 * time.Second)
	if !p.prog.Running() {
		return nil
	}
	a, err := p.call(order{Op: "quit"}, 8*time.Second)
	p.prog.Stdin.Close()
	if err == nil && !a.OK {
		err = fmt.Errorf("%w: %s", errNoReturn, a.Err)
	}
	p.quitErr = err
	return err
}
