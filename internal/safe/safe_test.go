package safe_test

import (
	"os/exec"
	"strings"
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

// A URL whose user or password a parser would misread is refused, and the
// refusal quotes none of it; a URL written right passes.
func TestCheckURL(t *testing.T) {
	for _, tt := range []struct {
		url, says string
	}{
		{"redis://localhost:6379/0", ""},
		{"redis://:s3cr%40tPass@localhost:6379/0", ""},
		{"postgres://walletlock:s3cr!$tPass@localhost:5432/walletlock?sslmode=disable", ""},
		{"postgres://walletlock:s3cr@tPass@localhost:5432/walletlock", "more than one @"},
		{"redis://:s3cr/tPass@localhost:6379/0", "%2F"},
		{"redis://:s3cr tPass@localhost:6379/0", "%20"},
		{"redis://:s3cr%tPass@localhost:6379/0", "%25"},
		{"redis://:s3crétPass@localhost:6379/0", "percent-encode"},
	} {
		err := safe.CheckURL("REDIS_URL", tt.url)
		switch {
		case tt.says == "" && err != nil:
			t.Errorf("CheckURL(%q) = %v, want nil", tt.url, err)
		case tt.says != "" && (err == nil || !strings.Contains(err.Error(), tt.says)):
			t.Errorf("CheckURL(%q) = %v, want an error that says %q", tt.url, err, tt.says)
		case err != nil && (strings.Contains(err.Error(), "s3cr") || strings.Contains(err.Error(), "tPass")):
			t.Errorf("CheckURL(%q) = %v: it shows a piece of the password", tt.url, err)
		}
	}
}

// What a log writes through Writer reaches its reader one message a line,
// escaped.
func TestWriter_oneMessageALine(t *testing.T) {
	var b strings.Builder
	w := safe.Writer{W: &b}
	w.Write([]byte("step2-lock: NOAUTH\nAuthentication\x1b[31m required\n"))
	w.Write([]byte("second\n"))
	if want := "step2-lock: NOAUTH Authentication\\x1b[31m required\nsecond\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
