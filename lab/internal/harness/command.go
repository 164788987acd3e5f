package harness

import (
	"context"
	"os/exec"
)

// WaitDelay is how long Command's program has, after its interrupt, to
// clean up and exit before it is killed: its own clean-up is bounded by
// CleanupTimeout, and this leaves as much again for a busy machine.
const WaitDelay = 2 * CleanupTimeout

// Command is exec.CommandContext for running one of these programs from
// another. When ctx ends the program is not killed, which would skip its
// clean-up: it gets an interrupt, as from Ctrl-C, and WaitDelay to exit.
// On Unix it runs in a process group of its own, so that a Ctrl-C at the
// terminal reaches it once, through ctx: a second would make it exit at
// once, without cleaning up.
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	interruptOnCancel(cmd)
	cmd.WaitDelay = WaitDelay
	return cmd
}
