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
// clean-up: it gets an interrupt, as from Ctrl-C, and WaitDelay to clean
// up and exit; only then is it killed.
//
// On Unix the program runs in a process group of its own, so that a Ctrl-C
// at the terminal reaches it only through ctx, as one interrupt: the
// terminal's own SIGINT and the forwarded one would be two, and a second
// makes a program exit at once, without cleaning up. (Elsewhere it is
// killed when ctx ends, as exec.CommandContext does.)
func Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	interruptOnCancel(cmd)
	cmd.WaitDelay = WaitDelay
	return cmd
}
