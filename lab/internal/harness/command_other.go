//go:build !unix

package harness

import "os/exec"

// Without process groups and SIGINT, the program is killed when ctx ends.
func interruptOnCancel(*exec.Cmd) {}
