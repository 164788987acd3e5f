// Package cli holds the one flag convention every program here follows, so
// that a workshop room sees the same behaviour from each of them.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// Parse parses args with fs. It returns (0, false) when the program should
// go on. Otherwise it has already told the user, and returns the exit code:
// 0 after -h or -help, which list the flags on stdout; 2 for a bad flag or a
// stray argument, which get one line on stderr naming the program.
func Parse(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (code int, stop bool) {
	fs.SetOutput(io.Discard) // flag's own message would add the whole list
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdout, "usage: go run ./cmd/%s [flags]\n", fs.Name())
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0, true
	}
	if err == nil && fs.NArg() > 0 {
		err = fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v (see -h)\n", fs.Name(), err)
		return 2, true
	}
	return 0, false
}
