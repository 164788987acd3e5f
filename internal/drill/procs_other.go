//go:build unix && !linux

package drill

import "syscall"

// dieWithParent does nothing here: without Pdeathsig, KillAll at the end
// of the run (and on Ctrl-C) is what stops the children.
func dieWithParent(*syscall.SysProcAttr) {}
