// Package safe makes text safe to show and commands safe to paste: the
// text of a server's error, or a name read from a file, is not ours to
// trust with a terminal, a command we print must run as it reads, and no
// error of ours may show a piece of a password.
package safe

import (
	"errors"
	"fmt"
	"io"
	"net/url"
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

// Writer writes the text of each Write to W on one line, through Line: a
// log's messages, which quote servers, go to a terminal through it.
type Writer struct{ W io.Writer }

func (w Writer) Write(p []byte) (int, error) {
	_, err := fmt.Fprintln(w.W, Line(string(p)))
	return len(p), err
}

// Quote quotes s for a POSIX shell: a printed command with it pastes as
// it reads, whatever s holds.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// CheckURL refuses raw, the URL in the environment variable name, when its
// user or password holds a character that must be percent-encoded there.
// The parsers split such a URL differently (Go's at its last @, pgx's at
// its first; a # or ? ends the host early), take the rest of the password
// for the host, and print it in their errors. The user and password are
// taken to end at the last @, so the refusal covers every split, and its
// error quotes no part of raw.
func CheckURL(name, raw string) error {
	_, rest, _ := strings.Cut(raw, "://")
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return nil
	}
	info := rest[:at]
	if strings.Contains(info, "@") {
		return errors.New(name + " has more than one @: an @ in a user or password is written %40")
	}
	// RFC 3986 allows these there, and % only before two hex digits.
	allowed := func(c rune) bool {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("-._~!$&'()*+,;=:%", c)
	}
	if _, err := url.PathUnescape(info); err != nil || strings.IndexFunc(info, func(c rune) bool { return !allowed(c) }) >= 0 {
		return errors.New(name + ": percent-encode the user and password (/ as %2F, ? as %3F, # as %23, % as %25, a space as %20)")
	}
	return nil
}
