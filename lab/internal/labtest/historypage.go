package labtest

import (
	"os"
	"strings"
	"testing"
)

// HistoryPageSays is what the history page at path (history.WritePage)
// says of each window it draws, one line each: "this window:
// linearizable=...", the row under that window's workers.
func HistoryPageSays(t testing.TB, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no history page: %v", err)
	}
	var says []string
	for s := string(b); ; {
		i := strings.Index(s, `"Description":"this window: linearizable=`)
		if i < 0 {
			return says
		}
		s = s[i+len(`"Description":"`):]
		j := strings.IndexByte(s, '"')
		says, s = append(says, s[:j]), s[j:]
	}
}
