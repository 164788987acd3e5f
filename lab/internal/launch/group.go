package launch

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"time"
)

// ErrNotOurs is returned when asked to signal a process that has already
// exited: its pid may belong to another process by now.
var ErrNotOurs = errors.New("launch: not a running process of ours")

// Group is every process started through it. The zero Group is ready to
// use; KillAll ends what is left.
type Group struct {
	mu   sync.Mutex
	list []*Proc
}

// Proc is one process a Group started.
type Proc struct {
	Name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
}

// Start starts cmd in a process group of its own and keeps it for
// KillAll. It reaps the process as soon as it exits: use pipes of your
// own for its output (see StartProgram).
func (g *Group) Start(name string, cmd *exec.Cmd) (*Proc, error) {
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("launch: start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(p.exited) }()
	g.mu.Lock()
	g.list = append(g.list, p)
	g.mu.Unlock()
	return p, nil
}

// Exited is closed when the process has ended and been reaped.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Running reports whether the process has not been reaped yet.
func (p *Proc) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// State says how the process ended ("exit status 1", "signal: killed"),
// or "still running".
func (p *Proc) State() string {
	if p.Running() {
		return "still running"
	}
	return p.cmd.ProcessState.String() // set before exited is closed
}

// Kill kills the process and its group (SIGKILL), and waits, at most d,
// until the process is reaped. It reports whether it was.
func (p *Proc) Kill(d time.Duration) bool {
	if p.Running() {
		kill(p.cmd.Process)
	}
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *Proc) String() string {
	if p == nil {
		return "<nil>"
	}
	return p.Name
}

// KillAll kills every process of the group still running and returns the
// names of those that had not been reaped within d.
func (g *Group) KillAll(d time.Duration) []string {
	g.mu.Lock()
	list := g.list
	g.list = nil
	g.mu.Unlock()
	var left []string
	deadline := time.Now().Add(d)
	for _, p := range list {
		if !p.Kill(time.Until(deadline)) {
			left = append(left, fmt.Sprintf("%s (pid %d)", p.Name, p.cmd.Process.Pid))
		}
	}
	return left
}

// errExited is waitReady's error for a process that ended first.
var errExited = errors.New("exited at start")

// waitReady asks ready every 20 ms until it says yes, and fails when
// exited is closed first (errExited), or ctx ends, or wait runs out.
func waitReady(ctx context.Context, exited <-chan struct{}, wait time.Duration, ready func() bool) error {
	deadline := time.After(wait)
	for !ready() {
		select {
		case <-exited:
			return errExited
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("no answer within %v", wait)
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}
