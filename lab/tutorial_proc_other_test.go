//go:build !linux

package walletlock_test

import "os/exec"

// dieWithTest does nothing here: without Pdeathsig, the context's end
// (exec.CommandContext) is what stops a program the test runs.
func dieWithTest(*exec.Cmd) {}
