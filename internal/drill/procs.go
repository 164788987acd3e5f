//go:build unix

package drill

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ErrNotOurs is returned when asked to signal a process the drill did not
// start, or one that has already exited (its pid may belong to another
// process by now).
var ErrNotOurs = errors.New("drill: not a running process of this drill")

// Procs is every process a drill started. A process can only be signalled
// through the Proc that Start returned, so the drill cannot reach a
// process it did not start.
type Procs struct {
	mu   sync.Mutex
	list []*Proc
}

// Proc is one process the drill started, in a process group of its own.
type Proc struct {
	Name   string
	cmd    *exec.Cmd
	exited chan struct{} // closed once the process has been reaped
	procs  *Procs
}

// Start starts cmd in a new process group and keeps it for KillAll.
func (ps *Procs) Start(name string, cmd *exec.Cmd) (*Proc, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	dieWithParent(cmd.SysProcAttr)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("drill: start %s: %w", name, err)
	}
	p := &Proc{Name: name, cmd: cmd, exited: make(chan struct{}), procs: ps}
	go func() { cmd.Wait(); close(p.exited) }()
	ps.mu.Lock()
	ps.list = append(ps.list, p)
	ps.mu.Unlock()
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

// Signal sends sig to the process group of a process this drill started.
// It refuses one that has exited: its pid may have been reused.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p == nil || !p.Running() {
		return fmt.Errorf("%w: %v", ErrNotOurs, p)
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Pause stops the process (SIGSTOP) as the kernel would stall it.
func (p *Proc) Pause() error { return p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error { return p.Signal(syscall.SIGCONT) }

// Kill kills the process group (SIGKILL) and waits, at most d, until the
// process is reaped. It reports whether it was.
func (p *Proc) Kill(d time.Duration) bool {
	if p.Running() {
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		syscall.Kill(-p.cmd.Process.Pid, syscall.SIGCONT) // a stopped process dies only once continued
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

// KillAll kills every process still running and returns the names of
// those that had not been reaped within d.
func (ps *Procs) KillAll(d time.Duration) []string {
	ps.mu.Lock()
	list := append([]*Proc(nil), ps.list...)
	ps.list = nil
	ps.mu.Unlock()
	var left []string
	deadline := time.Now().Add(d)
	for _, p := range list {
		if !p.Kill(time.Until(deadline)) {
			left = append(left, fmt.Sprintf("%s (pid %d)", p.Name, p.cmd.Process.Pid))
		}
	}
	return left
}
