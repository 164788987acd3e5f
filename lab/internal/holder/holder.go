// Package holder drives a holder process: a lock in a process of its
// own that speaks the judge's holder protocol, one JSON object a line on
// its stdin (a Request) and on its stdout (an Answer to each, and events).
// docs/judge.md has the protocol; a Go lock's holder is the judging
// program the judge builds for it, started again with the holder's
// environment (Env). The room's race drives the laptops' locks through it.
package holder

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	"example.com/walletlock/lab/internal/launch"
)

// The environment of a holder process: the Redis it makes its lock on
// (the protocol's), and the adapter a Go judging program serves as a
// holder (the judge's own programs').
const (
	RedisEnv   = "JUDGE_REDIS_ADDR"
	AdapterEnv = "WALLETLOCK_JUDGE_HOLDER"
)

// ErrNoReturn is a call that got no answer in time, or whose holder died
// with it in flight.
var ErrNoReturn = errors.New("holder: did not return")

// Request is one line to a holder: see docs/judge.md.
type Request struct {
	ID int64  `json:"id"`
	Op string `json:"op"` // hello, acquire, release, refresh, watch, stop, quit
	// Lease is the driver's name for a lease: acquire takes it, the other
	// requests name it.
	Lease string `json:"lease,omitempty"`
	Key   string `json:"key,omitempty"`
	// TTL and Wait are milliseconds, fractions allowed (0.5 is 500µs):
	// the lease's time to live, and how long the call may take (its
	// context's timeout).
	TTL    float64 `json:"ttl_ms"`
	Wait   float64 `json:"wait_ms,omitempty"`
	Fenced bool    `json:"fenced,omitempty"` // acquire with a fence (AcquireFenced)
	// Cancelled: send the call on a context that has already ended, as a
	// `defer l.Release(ctx)` does after the work's ctx ran out.
	Cancelled bool `json:"cancelled,omitempty"`
}

// Answer is one line a holder writes: the answer to a request (ID set),
// or an event (Event set): "lost", a watchdog cancelled the work.
type Answer struct {
	ID      int64  `json:"id,omitempty"`
	Event   string `json:"event,omitempty"`
	Lease   string `json:"lease,omitempty"`
	OK      bool   `json:"ok,omitempty"`
	Error   string `json:"error,omitempty"`
	NotHeld bool   `json:"not_held,omitempty"` // the lock answered that the lease was not the caller's
	Unknown bool   `json:"unknown,omitempty"`  // the holder cannot tell whether the call took effect
	// NotClaimed: the lock has no such call (a refresh, a fence).
	NotClaimed bool  `json:"not_claimed,omitempty"`
	Fence      int64 `json:"fence,omitempty"`
	// Can, in hello's answer: what the lock offers beyond acquire and
	// release ("refresh", "watch", "fence"), and "concurrent" when the
	// holder answers several requests at once.
	Can []string `json:"can,omitempty"`
	// At is when the driver read the line (Unix ns): its clock, not the
	// holder's.
	At int64 `json:"-"`
}

// Holder is one holder process, driven by the judge or by the room's
// race: the one reader of its answers and writer of its requests.
type Holder struct {
	*launch.Program
	Log launch.Log // its stderr, and what it printed that was not the protocol

	mu     sync.Mutex
	next   int64
	waits  map[int64]chan Answer
	events func(Answer)
	ended  chan struct{} // its stdout read to the end
	wmu    sync.Mutex
}

// Errors of Await, each an ErrNoReturn: the process died with the call in
// flight, or the call did not return in time (and the holder was killed).
var (
	ErrDied     = fmt.Errorf("%w: the holder died", ErrNoReturn)
	ErrTimedOut = fmt.Errorf("%w: no answer in time", ErrNoReturn)
)

// Start starts cmd as a holder in g; events, if not nil, gets its events.
func Start(g *launch.Group, name string, cmd *exec.Cmd, events func(Answer)) (*Holder, error) {
	h := &Holder{waits: map[int64]chan Answer{}, events: events, ended: make(chan struct{})}
	cmd.Stderr = &h.Log
	p, err := g.StartProgram(name, cmd)
	if err != nil {
		return nil, err
	}
	h.Program = p
	go h.read()
	return h, nil
}

// read hands each answer to its caller and each event to events, stamped
// with when it was read (At); any other line is the lock's own output,
// kept and never parsed further. A print with no newline before an
// answer leaves the answer on the same line, after it: it is still found.
func (h *Holder) read() {
	defer close(h.ended)
	defer h.Stdout.Close()
	sc := bufio.NewScanner(h.Stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var a Answer
		i := strings.Index(line, `{"`)
		if i < 0 || json.Unmarshal([]byte(line[i:]), &a) != nil || a.ID == 0 && a.Event == "" {
			fmt.Fprintln(&h.Log, line)
			continue
		}
		if i > 0 {
			fmt.Fprintln(&h.Log, line[:i])
		}
		a.At = time.Now().UnixNano()
		if a.Event != "" {
			if h.events != nil {
				h.events(a)
			}
			continue
		}
		h.mu.Lock()
		ch := h.waits[a.ID]
		delete(h.waits, a.ID)
		h.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// Send writes q (its ID set here) and returns where its answer will come,
// and when it was written (Unix ns).
func (h *Holder) Send(q Request) (<-chan Answer, int64) {
	ch := make(chan Answer, 1)
	h.mu.Lock()
	h.next++
	q.ID = h.next
	h.waits[q.ID] = ch
	h.mu.Unlock()
	b, _ := json.Marshal(q)
	h.wmu.Lock()
	defer h.wmu.Unlock()
	sent := time.Now().UnixNano()
	h.Stdin.Write(append(b, '\n'))
	return ch, sent
}

// Await waits, at most within, for the answer on ch. When none comes the
// holder is killed (ErrTimedOut); when it died first, ErrDied.
func (h *Holder) Await(ch <-chan Answer, within time.Duration) (Answer, error) {
	t := time.NewTimer(within)
	defer t.Stop()
	select {
	case a := <-ch:
		return a, nil
	case <-h.Exited():
		select { // its last lines may still be in the pipe
		case <-h.ended:
		case <-time.After(3 * time.Second):
		}
		select {
		case a := <-ch:
			return a, nil
		default:
		}
		return Answer{}, ErrDied
	case <-t.C:
		h.Kill(3 * time.Second)
		return Answer{}, ErrTimedOut
	}
}

// Call sends q and waits, at most within, for its answer; the error says
// whether the holder died or did not answer.
func (h *Holder) Call(q Request, within time.Duration) (Answer, error) {
	ch, _ := h.Send(q)
	a, err := h.Await(ch, within)
	switch {
	case errors.Is(err, ErrDied):
		return a, fmt.Errorf("%w: the holder died during its %s (%s): %s", ErrNoReturn, q.Op, h.State(), h.Log.LastLine())
	case err != nil:
		return a, fmt.Errorf("%w: its %s did not return within %v, and the holder was killed", ErrNoReturn, q.Op, within)
	}
	return a, nil
}

// Quit asks the holder to end, and kills it if it has not within a few
// seconds.
func (h *Holder) Quit() {
	if h.Running() {
		h.Call(Request{Op: "quit"}, 5*time.Second)
	}
	h.Stdin.Close()
	h.Kill(3 * time.Second)
}
