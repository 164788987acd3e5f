//go:build unix

package drill

import (
	"strings"
	"testing"
	"time"
)

func TestNetTag_namesFitLinuxInterfaces(t *testing.T) {
	a, b := NetTag("walletlock:drill:"), NetTag("walletlock:drill:b:")
	if a == b {
		t.Errorf("two prefixes share the tag %s", a)
	}
	if a != NetTag("walletlock:drill:") {
		t.Error("NetTag is not a function of the prefix")
	}
	n := &Net{tag: a}
	for _, name := range n.links() {
		if len(name) > 15 {
			t.Errorf("%s is %d characters; Linux allows 15", name, len(name))
		}
	}
}

func TestWithHostPort(t *testing.T) {
	for _, tt := range []struct{ name, raw, want string }{
		{"a URL", "postgres://wl:secret@127.0.0.1:5432/walletlock?sslmode=disable",
			"postgres://wl:secret@198.19.7.254:40001/walletlock?sslmode=disable"},
		{"a URL that names its host again in the query", "postgresql://wl@localhost/walletlock?host=/tmp&port=5433",
			"postgresql://wl@198.19.7.254:40001/walletlock"},
		{"keywords", "host=127.0.0.1 port=5432 dbname=walletlock",
			"host=127.0.0.1 port=5432 dbname=walletlock host=198.19.7.254 port=40001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withHostPort(tt.raw, "198.19.7.254:40001")
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPostgresAddr_refusesAUnixSocket(t *testing.T) {
	if _, err := PostgresAddr("host=/var/run/postgresql dbname=walletlock"); err == nil || !strings.Contains(err.Error(), "Unix socket") {
		t.Errorf("err = %v, want one that names the Unix socket", err)
	}
	if got, err := PostgresAddr("postgres://u:p@127.0.0.1:5432/db"); err != nil || got != "127.0.0.1:5432" {
		t.Errorf("got %q, %v", got, err)
	}
}

// The window runs from the new primary's first grant to the old one's
// last, and counts the overlaps of an old primary's holder with a new
// one's, not those within one primary.
func TestWindow_fromTheSpendersReports(t *testing.T) {
	ms := func(n int64) int64 { return 1_000_000_000_000 + n*int64(time.Millisecond) }
	r := &runner{part: &partition{cut: ms(0), healed: ms(5000), old: "old:6379", new: "new:6379"}}
	r.sections = []section{
		{wallet: 1, start: ms(-100), end: ms(-90), holder: "a", server: "old:6379"}, // before the cut
		{wallet: 1, start: ms(100), end: ms(110), holder: "b", server: "old:6379", fence: 7},
		{wallet: 1, start: ms(2500), end: ms(2600), holder: "c", server: "old:6379", fence: 9},
		{wallet: 1, start: ms(2000), end: ms(2550), holder: "d", server: "new:6379"},
		{wallet: 2, start: ms(2100), end: ms(2110), holder: "e", server: "new:6379"},
		{wallet: 2, start: ms(2105), end: ms(2120), holder: "f", server: "new:6379"}, // one primary: not counted
	}
	w := r.window()
	if w.Both != 500*time.Millisecond || w.OldFor != 2500*time.Millisecond {
		t.Errorf("both %v, old for %v; want 500ms and 2.5s", w.Both, w.OldFor)
	}
	if w.DoubleGrants != 1 || w.OldGrants != 2 || w.NewGrants != 3 {
		t.Errorf("double grants %d, old grants %d, new grants %d; want 1, 2, 3", w.DoubleGrants, w.OldGrants, w.NewGrants)
	}
	if !strings.Contains(w.Lost, "2 lock grants") || !strings.Contains(w.Lost, "fences 7 to 9") {
		t.Errorf("lost = %q", w.Lost)
	}
}
