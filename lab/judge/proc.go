package judge

// A holder process seen from the judge: the process, its pipes, and the
// proxy every command it sends to Redis passes through.

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/holder"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/wire"
)

// errNoReturn is what a call to a holder ends with when the lock did not
// answer in time, or the holder process died with the call in flight.
var errNoReturn = errors.New("judge: did not return")

// proc is one holder process, as the judge sees it.
type proc struct {
	name   string // "A", "B": the holder's name in every sentence and drawing
	h      *holder.Holder
	prog   *launch.Program
	wire   *wire.Proxy // between it and the check's Redis
	leases int         // how many leases it took, for the drawing's labels

	quitErr error
}

// start starts holder process name, with its proxy in front of the
// Redis at upstream.
func (r *runner) start(ctx context.Context, name, upstream string, events func(*proc, answer)) (*proc, error) {
	w, err := wire.Listen("127.0.0.1:0", upstream)
	if err != nil {
		return nil, fmt.Errorf("judge: start the proxy of holder %s: %w", name, err)
	}
	p := &proc{name: name, wire: w}
	var cmd *exec.Cmd
	if len(r.c.adapter.Command) > 0 {
		cmd = exec.CommandContext(ctx, r.c.adapter.Command[0], r.c.adapter.Command[1:]...)
		cmd.Env = cmd.Environ()
	} else {
		cmd = exec.CommandContext(ctx, r.c.exe, r.c.args...)
		cmd.Env = append(cmd.Environ(), holderEnv+"="+r.c.adapter.Name)
	}
	cmd.Env = append(cmd.Env, redisEnv+"="+w.Addr())
	cmd.Dir = r.c.workDir
	h, err := holder.Start(r.procs, "holder "+name, cmd, func(a holder.Answer) { events(p, answer{Answer: a, ret: a.At}) })
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("judge: start holder %s: %w", name, err)
	}
	p.h, p.prog = h, h.Program
	return p, nil
}

// send writes a request and returns where its answer will come, stamped
// with when it was sent.
func (p *proc) send(q request) (<-chan holder.Answer, int64) { return p.h.Send(q) }

// await waits, at most within, for the answer to q. When it does not come
// the holder is killed, and the error says what happened: the lock did
// not return, or the process died (a panic, or a kill the judge ordered).
func (p *proc) await(q request, ch <-chan holder.Answer, call int64, within time.Duration) (answer, error) {
	a, err := p.h.Await(ch, within)
	switch {
	case errors.Is(err, holder.ErrDied):
		return answer{}, fmt.Errorf("%w: holder %s died during its %s (%s)%s", errNoReturn, p.name, opName(q), p.prog.State(), p.why())
	case err != nil:
		return answer{}, fmt.Errorf("%w: %s did not return within %v; the judge killed holder %s", errNoReturn, opName(q), within.Round(time.Millisecond), p.name)
	}
	return answer{Answer: a, call: call, ret: a.At}, nil
}

// opName is a request as the sentences name the lock's call.
func opName(q request) string {
	switch q.Op {
	case "hello":
		return "first Acquire, on a free key"
	case "acquire":
		if q.Fenced {
			return "AcquireFenced"
		}
		return "Acquire"
	case "quit":
		return "clean-up"
	}
	return strings.ToUpper(q.Op[:1]) + q.Op[1:]
}

// why is what the process said as it died (a panic's first line), ready
// to follow a sentence.
func (p *proc) why() string {
	s := strings.TrimSpace(p.h.Log.String())
	if s == "" {
		return ""
	}
	for _, l := range strings.Split(s, "\n") {
		if strings.HasPrefix(l, "panic:") || strings.HasPrefix(l, "fatal error:") {
			return ": " + safe.Line(l)
		}
	}
	return ": " + safe.Line(p.h.Log.LastLine())
}

// quit asks the holder to end and reports what it left running; it kills
// the process if it does not end within a few seconds, and closes its
// proxy.
func (p *proc) quit() error {
	defer p.wire.Close()
	defer p.prog.Kill(3 * time.Second)
	if !p.prog.Running() {
		return nil
	}
	q := request{Op: "quit"}
	ch, call := p.send(q)
	a, err := p.await(q, ch, call, 8*time.Second)
	p.prog.Stdin.Close()
	if err == nil && !a.OK && a.Error != "" {
		err = fmt.Errorf("%w: %s", errNoReturn, a.Error)
	}
	p.quitErr = err
	return err
}

// output is what the holder printed that was not the protocol, a few
// lines, each made printable, with its name in front.
func (p *proc) output(most int) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(p.h.Log.String()), "\n") {
		if l = strings.TrimSpace(l); l == "" || len(out) == most {
			continue
		}
		out = append(out, "holder "+p.name+": "+safe.Line(l))
	}
	return out
}

// now is the time the judge stamps events with.
func now() int64 { return time.Now().UnixNano() }
