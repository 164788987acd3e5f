package walletlock_test

import (
	"os/exec"
	"syscall"
)

// dieWithTest makes a program the transcripts test runs die with it, so
// that a test killed mid-run leaves no program behind.
func dieWithTest(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
