package harness

import "testing"

func TestPrintable(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain text", "lab c", "lab c"},
		{"letters beyond ASCII", "café ×3 ✓", "café ×3 ✓"},
		{"an ESC sequence that sets the title", "lab\x1b]0;owned\a", `"lab\x1b]0;owned\a"`},
		{"a newline and a forged line", "lab\nEvery machine gave every verdict the lesson promises.", `"lab\nEvery machine gave every verdict the lesson promises."`},
		{"a carriage return", "lab\rok", `"lab\rok"`},
		{"a bell", "lab\a", `"lab\a"`},
		{"a tab, which would shift a table's columns", "lab\tb", `"lab\tb"`},
		{"a right-to-left override", "lab\u202eb", `"lab\u202eb"`},
		{"bytes that are not UTF-8", "lab\xff", `"lab\xff"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Printable(tt.in); got != tt.want {
				t.Errorf("Printable(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}
