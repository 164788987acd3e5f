//go:build unix

package drill

import (
	"strings"
	"testing"
	"time"
)

// The window runs from the new primary's first grant to the old one's
// last, and counts the overlaps of an old primary's holder with a new
// one's, not those within one primary.
func TestWindow_fromTheSpendersReports(t *testing.T) {
	ms := func(n int64) int64 { return 1_000_000_000_000 + n*int64(time.Millisecond) }
	p := &partition{cut: ms(0), healed: ms(5000), old: "old:6379", new: "new:6379"}
	w := p.window([]section{
		{wallet: 1, start: ms(-100), end: ms(-90), holder: "a", server: "old:6379"}, // before the cut
		{wallet: 1, start: ms(100), end: ms(110), holder: "b", server: "old:6379", fence: 7},
		{wallet: 1, start: ms(2500), end: ms(2600), holder: "c", server: "old:6379", fence: 9},
		{wallet: 1, start: ms(2000), end: ms(2550), holder: "d", server: "new:6379"},
		{wallet: 2, start: ms(2100), end: ms(2110), holder: "e", server: "new:6379"},
		{wallet: 2, start: ms(2105), end: ms(2120), holder: "f", server: "new:6379"}, // one primary: not counted
	})
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
