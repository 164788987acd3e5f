package harness

import (
	"context"
	"fmt"
	"io"
)

// Stopped reports an error that stopped the run before its check line, and
// returns the exit code. After Ctrl-C it prints "prog: interrupted by
// Ctrl-C <when> (err)" and returns ExitInterrupted; otherwise it prints
// "prog: err", naming the lost run lease instead of err when that is what
// ended the work, and returns 1.
func (s *Session) Stopped(stderr io.Writer, when string, err error) int {
	switch {
	case s.Interrupted():
		fmt.Fprintf(stderr, "%s: interrupted by Ctrl-C %s (%v)\n", s.prog, when, err)
		return ExitInterrupted
	case s.work.Err() != nil:
		err = context.Cause(s.work)
	}
	fmt.Fprintln(stderr, s.prog+":", err)
	return 1
}
