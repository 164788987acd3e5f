package harness

import (
	"flag"
	"fmt"
	"io"

	"example.com/walletlock/internal/safe"
)

// Program is what a program declares before its lesson runs: its name,
// its flag set with the flags every program has (-prefix, -json and
// -history), and where it prints. It adds its own flags to Flags, then
// calls Parse. cmd/loadtest is one.
type Program struct {
	Step   string
	Flags  *flag.FlagSet
	Stdout io.Writer
	Stderr io.Writer

	prefix      *string
	json        *bool
	historyFile *string
}

// New starts a program's flags: -prefix, whose default is prefix, -json,
// and -history, a page of the run's histories that the program writes.
func New(step, prefix string, stdout, stderr io.Writer) *Program {
	fs := flag.NewFlagSet(step, flag.ContinueOnError)
	p := &Program{Step: step, Flags: fs, Stdout: stdout, Stderr: stderr}
	p.prefix = fs.String("prefix", prefix, "prefix of the Redis keys this run writes")
	p.json = fs.Bool("json", false, "print the result as one JSON object instead of the text")
	p.historyFile = fs.String("history", "", "also write the run's histories of spends as porcupine's HTML page to this file")
	return p
}

// Prefix is -prefix; JSON is -json.
func (p *Program) Prefix() string { return *p.prefix }
func (p *Program) JSON() bool     { return *p.json }

// Parse parses args, then checks them: the prefix, the -history page and
// the program's own checks, which it calls after parsing (nil errors
// pass). It returns (0, true) when the program should go on; otherwise it
// has told the user, and returns the exit code (0 after -h, 2 for a bad
// flag), as Parse and Refuse do.
func (p *Program) Parse(args []string, checks func() []error) (code int, ok bool) {
	if code, stop := Parse(p.Flags, args, p.Stdout, p.Stderr); stop {
		return code, false
	}
	errs := []error{CheckPrefix(*p.prefix)}
	if *p.historyFile != "" {
		errs = append(errs, CheckPageOf("-history", *p.historyFile))
	}
	if checks != nil {
		errs = append(errs, checks()...)
	}
	if code, stop := Refuse(p.Flags, p.Stderr, errs...); stop {
		return code, false
	}
	return 0, true
}

// Fail prints "step: err" on stderr, in one line with nothing unprintable
// (safe.Line: pgx lists each address it tried on a line of its own, and a
// server's text is not ours to trust with a terminal), and returns 1.
func (p *Program) Fail(err error) int {
	fmt.Fprintln(p.Stderr, p.Step+":", safe.Line(err.Error()))
	return 1
}
