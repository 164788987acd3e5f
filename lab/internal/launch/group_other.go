//go:build !unix

package launch

import (
	"errors"
	"os"
	"os/exec"
)

var errNoSignals = errors.New("launch: no SIGSTOP on this system")

func ownGroup(*exec.Cmd) {}

func kill(p *os.Process) { p.Kill() }

// Pause fails here: the system has no SIGSTOP.
func (p *Proc) Pause() error { return errNoSignals }

// Resume does nothing here; see Pause.
func (p *Proc) Resume() error { return nil }
