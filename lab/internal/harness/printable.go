package harness

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s as it is when every character of it prints, and
// otherwise quoted as Go writes a string ("lab\x1b]0;owned\a"), so that
// a text read from a file (a host label, a phase name, an error) can
// neither drive the terminal (set its title, move the cursor, ring) nor
// start a line of its own that reads like the program's.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}
