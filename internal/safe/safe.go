// Package safe makes text safe to show and commands safe to paste: the
// text of a server's error, or a name read from a file, is not ours to
// trust with a terminal, and a command we print must run as it reads.
package safe

import (
	"strconv"
	"strings"
	"unicode"
)

// Line is s on one line, every character that is not printable shown
// escaped (\x1b, \u202e) instead of reaching the terminal.
func Line(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case unicode.IsSpace(c):
			b.WriteByte(' ')
		case !unicode.IsPrint(c):
			b.WriteString(strings.Trim(strconv.QuoteRune(c), "'"))
		default:
			b.WriteRune(c)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// Quote quotes s for a POSIX shell: a printed command with it pastes as
// it reads, whatever s holds.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
