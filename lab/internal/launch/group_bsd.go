//go:build unix && !linux

package launch

import "syscall"

// dieWithParent does nothing here: without Pdeathsig, KillAll (at the end
// of a run, on Ctrl-C, in a test's clean-up) is what stops the children.
func dieWithParent(*syscall.SysProcAttr) {}
