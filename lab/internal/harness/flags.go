// Flags: Parse, Refuse, and the checks and bounds every program applies.

package harness

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
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

// Refuse finishes checking the flags after Parse: given the checks' errors,
// nil for those that passed, it prints the first non-nil one in one line
// naming the program and returns (2, true); with none it returns (0,
// false).
func Refuse(fs *flag.FlagSet, stderr io.Writer, errs ...error) (code int, stop bool) {
	for _, err := range errs {
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", fs.Name(), err)
			return 2, true
		}
	}
	return 0, false
}

// ErrEmptyPrefix refuses -prefix "": every key a program writes lives under
// its prefix, and without one it would write and delete keys outside the
// walletlock: namespace, perhaps another application's.
var ErrEmptyPrefix = errors.New("-prefix must not be empty: every key this program writes needs one")

// ErrBadPrefix refuses a prefix with a character outside PrefixChars.
var ErrBadPrefix = errors.New("-prefix may hold only ASCII letters, digits and the characters " + PrefixChars)

// PrefixChars are the characters a prefix may hold besides ASCII letters
// and digits. None means anything to a shell, to SQL or to a Redis
// pattern but "_", a LIKE wildcard, which the printed commands escape
// (PostgresDeletePrefix). No braces: a prefix must not change the hash tag
// of the keys under it.
const PrefixChars = ":._-"

// CheckPrefix returns ErrEmptyPrefix for an empty prefix, an error that
// matches ErrBadPrefix and names the first bad character for one outside
// PrefixChars, else nil.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return ErrEmptyPrefix
	}
	for _, r := range prefix {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(PrefixChars, r)) {
			return fmt.Errorf("%w; %q holds %q", ErrBadPrefix, prefix, r)
		}
	}
	return nil
}

// Bounds on the flags, chosen so that a laptop runs the largest setting in
// a few hundred megabytes and answers Ctrl-C at once. MaxN bounds the
// goroutines a program starts (-workers); MaxDuration bounds each time
// a flag sets (-work, -ttl, -duration), so that sums and products of
// them stay far from overflowing a time.Duration.
const (
	MaxN        = 10_000
	MaxDuration = time.Hour
)

// CheckDuration refuses a duration above MaxDuration: "-work must be at
// most 1h, got 1000000h0m0s".
func CheckDuration(name string, d time.Duration) error {
	if d > MaxDuration {
		return fmt.Errorf("%s must be at most %s, got %v", name, strings.TrimSuffix(MaxDuration.String(), "0m0s"), d)
	}
	return nil
}

// Pick returns the names chosen by a list flag's value (-strategy,
// -nemesis): one name, several separated by commas (a name given twice
// counts once), or "all" for every one of all, in all's order. An unknown
// name is refused with the flag's name and what it accepts:
//
//	unknown -nemesis "7" (want all or some of none, pause, ...)
func Pick(flag, value string, all []string) ([]string, error) {
	if value == "all" {
		return all, nil
	}
	var out []string
	for name := range strings.SplitSeq(value, ",") {
		name = strings.TrimSpace(name)
		if !slices.Contains(all, name) {
			return nil, fmt.Errorf("unknown %s %q (want all or some of %s)", flag, name, strings.Join(all, ", "))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	return out, nil
}
