package safe_test

import (
	"os/exec"
	"testing"

	"example.com/walletlock/internal/safe"
)

func TestLine(t *testing.T) {
	tests := []struct{ in, want string }{
		{"NOAUTH Authentication required.", "NOAUTH Authentication required."},
		{"two\nlines\r\n", "two lines"},
		{"-NOAUTH \x1b[31mred\x1b]0;pwned\a", `-NOAUTH \x1b[31mred\x1b]0;pwned\a`},
		{"right-to-left \u202eoverride", `right-to-left \u202eoverride`},
		{"a wallet in Zürich", "a wallet in Zürich"},
	}
	for _, tt := range tests {
		if got := safe.Line(tt.in); got != tt.want {
			t.Errorf("Line(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// A quoted word reaches the shell as it is, whatever it holds.
func TestQuote_pastesAsItReads(t *testing.T) {
	for _, s := range []string{"plain", "it's", "ev$(touch pwned)il", "d`id`b", `back\slash "quoted"`, "new\nline", ""} {
		out, err := exec.Command("sh", "-c", "printf %s "+safe.Quote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh printf %s = %q, %v; want %q", safe.Quote(s), out, err, s)
		}
	}
}
