//go:build !unix

package cli

import "os/exec"

// Without process groups and SIGINT, the program is killed when ctx ends.
func interruptOnCancel(*exec.Cmd) {}
