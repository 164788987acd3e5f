//go:build unix

package launch

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// ownGroup puts the process in a process group of its own, keeping any
// other attribute (a Credential) the caller set.
func ownGroup(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	dieWithParent(cmd.SysProcAttr)
}

func kill(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL)
	syscall.Kill(-p.Pid, syscall.SIGCONT) // a stopped process dies only once continued
}

// Signal sends sig to the process group of the process. It refuses one
// that has exited: its pid may have been reused.
func (p *Proc) Signal(sig syscall.Signal) error {
	if p == nil || !p.Running() {
		return fmt.Errorf("%w: %v", ErrNotOurs, p)
	}
	return syscall.Kill(-p.cmd.Process.Pid, sig)
}

// Pause stops the process (SIGSTOP), as a machine that stalls it would:
// it keeps its connections and answers nothing.
func (p *Proc) Pause() error { return p.Signal(syscall.SIGSTOP) }

// Resume continues a paused process (SIGCONT).
func (p *Proc) Resume() error { return p.Signal(syscall.SIGCONT) }
