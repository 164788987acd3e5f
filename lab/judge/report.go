package judge

import (
	"fmt"
	"strings"
	"time"
)

// The outcomes a Verdict has.
const (
	pass       = "pass"        // the lock held the property
	fail       = "FAIL"        // it did not; Why names the first operation that broke it
	unknown    = "unknown"     // the judge could not tell; never a pass
	notClaimed = "not claimed" // the lock does not offer what the property is about
	broken     = "broken, as the lesson expects"
)

// Report is what a judging found, as `-json` prints it.
type Report struct {
	Lock     string        `json:"lock"`
	Seed     int64         `json:"seed"`
	Claims   []string      `json:"claims"` // what the lock offers beyond Acquire and Release
	Verdicts []Verdict     `json:"verdicts"`
	Took     time.Duration `json:"took_ns"`
	// Interrupted says what stopped the judging before its end (Ctrl-C,
	// a test's deadline); "" when it ran to the end.
	Interrupted string `json:"interrupted,omitempty"`
}

// Verdict is one property judged. Outcome is "pass"; "FAIL", with Why
// naming the first operation that broke it and Fix the likely mistake and
// its fix; "unknown" when the judge could not tell (never a pass); "not
// claimed" when the lock does not offer what the property is about; or
// "broken, as the lesson expects": a lease with no fence loses money to a
// paused holder, which is no fault of the lock's code.
type Verdict struct {
	ID      string `json:"id"`
	Chapter string `json:"chapter"` // lease, watchdog, fencing, faults, guards
	Step    int    `json:"step"`    // the article's step that teaches it (2, 3, 5); 0 for faults and guards
	Title   string `json:"title"`
	Outcome string `json:"outcome"`
	Why     string `json:"why"`           // one sentence: what happened
	Fix     string `json:"fix,omitempty"` // the likely mistake, and what to do instead
	// Output is what the lock printed during the check (its stdout and
	// stderr), a few lines at most: shown as the lock's own words.
	Output   []string      `json:"output,omitempty"`
	Took     time.Duration `json:"took_ns"`
	Timeline *timeline     `json:"timeline,omitempty"`
}

// Failed reports whether a property failed.
func (r Report) Failed() bool {
	for _, v := range r.Verdicts {
		if v.Outcome == fail {
			return true
		}
	}
	return false
}

// Count says how many verdicts had each outcome, on one line.
func (r Report) Count() string {
	n := map[string]int{}
	for _, v := range r.Verdicts {
		n[v.Outcome]++
	}
	var parts []string
	for _, o := range []string{pass, fail, unknown, notClaimed, broken} {
		if n[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[o], o))
		}
	}
	return fmt.Sprintf("%s: %s", plural(len(r.Verdicts), "property"), strings.Join(parts, ", "))
}

// Line is the verdict on one line of a terminal: chapter, outcome,
// title, what happened and, for a failure, the likely fix.
func (v Verdict) Line() string {
	s := fmt.Sprintf("%-8s %-13s %s", v.Chapter, short(v.Outcome), v.Title)
	if v.Why != "" {
		s += ": " + v.Why
	}
	if v.Fix != "" {
		s += ". Likely: " + v.Fix
	}
	return s
}

// short is an outcome in the verdict line's column.
func short(o string) string {
	if o == broken {
		return "broken"
	}
	return o
}

// dur is a duration as the sentences give it: 1.5s, 300ms, 500µs.
func dur(d time.Duration) string {
	switch {
	case d >= time.Second || d <= -time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Millisecond || d <= -time.Millisecond:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.String()
}

func quote(s string) string { return "\"" + s + "\"" }

func ordinal(k int) string {
	switch k {
	case 1:
		return "1st"
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return fmt.Sprintf("%dth", k)
}
