package launch

import (
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Program is a copy of one of our programs that takes its orders on
// stdin and reports on stdout: a spender process of the drill, a -procs
// copy of a step.
type Program struct {
	*Proc
	Stdin io.WriteCloser
	// Stdout stays open after the process is reaped, until read to its
	// end: read it to EOF, then Close it.
	Stdout io.ReadCloser
}

// StartProgram starts cmd with pipes for its stdin and stdout; cmd.Stderr
// is the caller's.
func (g *Group) StartProgram(name string, cmd *exec.Cmd) (*Program, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("launch: start %s: %w", name, err)
	}
	// A pipe of our own, not cmd.StdoutPipe: Start reaps the process as
	// soon as it exits, and Wait closes a StdoutPipe then, losing the last
	// lines still in it.
	r, w, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, fmt.Errorf("launch: start %s: %w", name, err)
	}
	cmd.Stdout = w
	p, err := g.Start(name, cmd)
	w.Close() // the child has its copy; EOF comes when it exits
	if err != nil {
		r.Close()
		return nil, err
	}
	return &Program{Proc: p, Stdin: stdin, Stdout: r}, nil
}
