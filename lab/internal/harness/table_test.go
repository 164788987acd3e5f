package harness_test

import (
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/harness"
)

func TestTable(t *testing.T) {
	tests := []struct {
		name   string
		indent string
		rows   [][]any
		want   string
	}{
		{"columns two spaces apart", "", [][]any{{"step", "ok"}, {"step2-lock", true}},
			"step        ok\nstep2-lock  true\n"},
		{"an indent before every line", "  ", [][]any{{"a", 1}, {"bb", 22}},
			"  a   1\n  bb  22\n"},
		{"a tab or a newline in a cell stays in its cell", "", [][]any{{"host\tname\nx", "y"}, {"h", "z"}},
			"host name x  y\nh            z\n"},
		{"control characters are escaped", "", [][]any{{"lab\x1b]0;owned\a", "v"}},
			`lab\x1b]0;owned\a  v` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			tab := harness.NewTable(&b, tt.indent)
			for _, r := range tt.rows {
				tab.Row(r...)
			}
			if err := tab.Flush(); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != tt.want {
				t.Errorf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}
