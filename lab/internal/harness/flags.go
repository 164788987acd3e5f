// Flags: Parse, Refuse, and the checks and bounds every program applies.
//
// What every program here does the same way, so that a
// workshop room sees the same behaviour from each of them: flags (Parse,
// Refuse and the checks and bounds), Ctrl-C (Main, Session, Await,
// Command), and the line that names what a run could not clean up
// (RedisDel).

package harness

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/big"
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
// pattern, so a prefix reads the same in every command a program prints
// for pasting; "_" is a LIKE wildcard, which those commands escape (see
// PostgresDeletePrefix). Braces are out too: a prefix must not change the
// hash tag of the keys under it.
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
// goroutines a program starts (-n, -workers); MaxDuration bounds each time
// a flag sets (-work, -ttl, -wait, -pause), so that sums and products of
// them stay far from overflowing a time.Duration.
const (
	MaxN        = 10_000
	MaxDuration = time.Hour
)

// CheckMax refuses a count above max: "-n must be at most 10000, got
// 200000".
func CheckMax(name string, v, max int) error {
	if v > max {
		return fmt.Errorf("%s must be at most %d, got %d", name, max, v)
	}
	return nil
}

// CheckDuration refuses a duration above MaxDuration: "-work must be at
// most 1h, got 1000000h0m0s".
func CheckDuration(name string, d time.Duration) error {
	if d > MaxDuration {
		return fmt.Errorf("%s must be at most %s, got %v", name, strings.TrimSuffix(MaxDuration.String(), "0m0s"), d)
	}
	return nil
}

// CheckSpends refuses n spends of amount from initial when the balance they
// could lead to, initial - amount*n, or amount*n itself does not fit an
// int64: the check line's figures would wrap around.
func CheckSpends(initial, amount int64, n int) error {
	total := new(big.Int).Mul(big.NewInt(amount), big.NewInt(int64(n)))
	low := new(big.Int).Sub(big.NewInt(initial), total)
	if !total.IsInt64() || !low.IsInt64() {
		return fmt.Errorf("-amount %d times -n %d overflows an int64 (at most %d): lower -amount or -n", amount, n, int64(math.MaxInt64))
	}
	return nil
}
