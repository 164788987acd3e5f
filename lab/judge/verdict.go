package judge

import (
	"fmt"
	"time"
)

// Outcome is a property's verdict.
type Outcome string

const (
	// Pass: the lock held the property.
	Pass Outcome = "pass"
	// Fail: it did not; Why names the first operation that broke it.
	Fail Outcome = "FAIL"
	// Unknown: the judge could not tell (a reply it could not see, a check
	// out of its time). Never a pass.
	Unknown Outcome = "unknown"
	// NotClaimed: the lock does not offer what the property is about (a
	// watchdog, a fence). Never a pass.
	NotClaimed Outcome = "not claimed"
	// Broken: the property does not hold, and the lesson says it cannot
	// for this kind of lock: a lease with no fence loses money to a
	// paused holder. Not a fault of the lock's code.
	Broken Outcome = "broken, as the lesson expects"
)

// Verdict is one property judged.
type Verdict struct {
	ID       string        `json:"id"`
	Step     int           `json:"step"` // 2, 3 or 5; 4 for the faults
	Title    string        `json:"title"`
	Outcome  Outcome       `json:"outcome"`
	Why      string        `json:"why"` // one sentence
	Took     time.Duration `json:"took_ns"`
	Timeline *Timeline     `json:"timeline,omitempty"`
}

// Line is the verdict on one line of a terminal.
func (v Verdict) Line() string {
	why := ""
	if v.Why != "" {
		why = ": " + v.Why
	}
	return fmt.Sprintf("%-6s %-14s %s%s", stepName(v.Step), v.Outcome, v.Title, why)
}

func stepName(step int) string {
	switch step {
	case 4:
		return "fault"
	case 6:
		return "guard"
	}
	return fmt.Sprintf("step %d", step)
}

// sec is a time of a check's timeline as its sentences give it: seconds
// since the check began.
func (c *check) sec(t int64) string {
	return fmt.Sprintf("%.2fs", float64(t-c.start)/1e9)
}

func dur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return d.String()
}
