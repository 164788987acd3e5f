//go:build unix

package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/wallet"
)

var errNoCopies error // this system has process groups

// child is one copy of the program that run started.
type child struct {
	name  string // "spender process 2 of 4"
	share int    // how many spenders it runs
	proc  *launch.Program
	out   chan copyTally // what it writes on stdout; closed at its end
}

// runCopies is run for Procs above 1.
func (sp spenders) runCopies(ctx context.Context) wallet.Tally {
	exe, err := os.Executable()
	if err != nil {
		return failed(sp.N, fmt.Errorf("procs: find this program's binary: %w", err))
	}
	// launch starts each copy in a process group of its own, so that a
	// Ctrl-C at the terminal reaches it only through run, and kills it
	// when this process dies (on Linux, even by SIGKILL). KillAll at the
	// end stops any copy still there, and nothing else.
	var ps launch.Group
	defer ps.KillAll(time.Second)
	stderr := launch.SharedWriter(sp.Stderr)
	copies := make([]*child, sp.Procs)
	for i := range copies {
		share := sp.N / sp.Procs
		if i < sp.N%sp.Procs {
			share++
		}
		name := fmt.Sprintf("spender process %d of %d", i+1, sp.Procs)
		if copies[i], err = start(&ps, name, share, exe, sp.Args, stderr); err != nil {
			return failed(sp.N, err)
		}
	}

	// Every copy connects first; then they all start at once.
	timeout := time.After(readyTimeout)
	for _, c := range copies {
		select {
		case r, ok := <-c.out:
			if !ok || !r.Ready {
				return failed(sp.N, c.ended("before it could start"))
			}
		case <-ctx.Done(): // nothing spent yet: KillAll stops them, silently
			return failed(sp.N, context.Cause(ctx))
		case <-timeout:
			return failed(sp.N, fmt.Errorf("procs: %s was not ready within %v", c.name, readyTimeout))
		}
	}
	if ctx.Err() != nil {
		return failed(sp.N, context.Cause(ctx))
	}
	for _, c := range copies {
		io.WriteString(c.proc.Stdin, "go\n") // a copy that is gone says so by sending no tally
		c.proc.Stdin.Close()
	}

	// From now on, when ctx ends each copy gets one interrupt, as from
	// Ctrl-C, and killAfter to send its tally.
	giveUp := make(chan struct{})
	defer context.AfterFunc(ctx, func() {
		for _, c := range copies {
			c.proc.Signal(syscall.SIGINT)
		}
		time.AfterFunc(killAfter, func() { close(giveUp) })
	})()

	var t wallet.Tally
	first := 0 // the copy's first spender, numbered across the copies
	for _, c := range copies {
		r, err := c.tally(giveUp)
		first += c.share
		if err == nil {
			r.add(&t, sp.Also)
			for _, op := range r.Ops {
				op.Client += first - c.share // numbered across the copies
				sp.History.Add(op)
			}
			continue
		}
		if sp.History != nil {
			sp.History.Lose(c.share) // what it spent is missing from the history
		}
		// Its spenders may have written or not: each spend's outcome is
		// unknown.
		t.Unknown += c.share
		for range c.share {
			t.Errors = append(t.Errors, fmt.Errorf("%w: %w", wallet.ErrUnknownOutcome, err))
		}
	}
	return t
}

// tally waits for the copy's tally until giveUp is closed, then kills it;
// a tally written before its end still counts.
func (c *child) tally(giveUp <-chan struct{}) (copyTally, error) {
	select {
	case r, ok := <-c.out:
		if !ok {
			return r, c.ended("without its tally")
		}
		return r, nil
	case <-giveUp:
	}
	c.proc.Kill(time.Second)
	select {
	case r, ok := <-c.out: // closed once the copy is dead
		if ok {
			return r, nil
		}
	case <-time.After(time.Second):
	}
	return copyTally{}, fmt.Errorf("procs: %s sent no tally within %v of the interrupt and was killed", c.name, killAfter)
}

// start starts one copy, with share spenders, and reads its stdout.
func start(ps *launch.Group, name string, share int, exe string, args []string, stderr io.Writer) (*child, error) {
	c := &child{name: name, share: share, out: make(chan copyTally, 2)}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", procsEnv, share))
	cmd.Stderr = stderr
	var err error
	if c.proc, err = ps.StartProgram(name, cmd); err != nil {
		return nil, fmt.Errorf("procs: %w", err)
	}
	go func() {
		defer c.proc.Stdout.Close()
		defer close(c.out)
		dec := json.NewDecoder(c.proc.Stdout)
		for {
			var rep copyTally
			if dec.Decode(&rep) != nil {
				return
			}
			c.out <- rep
		}
	}()
	return c, nil
}

// ended is the error of a copy that closed its stdout before it should
// have: it waits a moment for the copy's end and names how it ended. What
// the copy said about it went to stderr.
func (c *child) ended(when string) error {
	select {
	case <-c.proc.Exited():
	case <-time.After(time.Second):
	}
	return fmt.Errorf("procs: %s ended %s (%s)", c.name, when, c.proc.State())
}
