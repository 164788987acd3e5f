// Package lesson is the one place that says what each step must print: the
// verdict of every phase of every step program. The programs check
// themselves against it (a phase that gives another verdict makes them exit
// 1), `make workshop` compares a room's runs with it, and a test holds
// TUTORIAL.md to it.
package lesson

import "fmt"

// Verdicts, as the check line ends.
const (
	OK     = "OK"
	Broken = "BROKEN"
)

// Phase is one labelled check line of a step program.
type Phase struct {
	Step  string // program directory under cmd/, e.g. "step3-ttl"
	Phase string // label within the step, e.g. "2" or "jitter"
	Want  string // OK or BROKEN
	What  string // one line: what the phase shows
}

// Phases lists every phase of every step, in tutorial order.
var Phases = []Phase{
	{"step1-race", "race", Broken, "no lock: concurrent read-modify-writes lose updates"},
	{"step2-lock", "lock", OK, "a hand-built lease serialises the spends"},
	{"step3-ttl", "1", Broken, "work outlives the TTL with no watchdog: two holders at once"},
	{"step3-ttl", "2", OK, "the watchdog refreshes the lease while the work runs"},
	{"step3-ttl", "3", OK, "the lease is lost mid-work: the watchdog cancels the spend before it writes"},
	{"step4-redislock", "lockstep", OK, "bsm/redislock, every waiter retries at the same moments"},
	{"step4-redislock", "exponential", OK, "bsm/redislock with exponential backoff"},
	{"step4-redislock", "jitter", OK, "bsm/redislock with random waits"},
	{"step5-fencing", "1", Broken, "a paused holder writes after its lease expired"},
	{"step5-fencing", "2", OK, "the same timeline with fencing: PostgreSQL refuses the stale write"},
	{"step5-fencing", "3", OK, "50 fenced spenders, some stalling past the TTL"},
	{"step5-fencing", "4", OK, "no Redis: a version column and a conditional UPDATE"},
	{"step6-loadtest", "none", Broken, "the control: no lock under load"},
	{"step6-loadtest", "lock", OK, "the hand-built lease under load"},
	{"step6-loadtest", "redislock", OK, "bsm/redislock under load"},
	{"step6-loadtest", "redsync", OK, "go-redsync's mutex on one Redis under load"},
	{"step6-loadtest", "fair", OK, "the fair lock: waiters queue and a release hands off, under load"},
	{"step6-loadtest", "fenced", OK, "lease plus fencing checked by PostgreSQL under load"},
	{"step6-loadtest", "atomic", OK, "no lock: one Lua script checks and takes, under load"},
	{"step6-loadtest", "version", OK, "PostgreSQL only: version column under load"},
	{"step6-loadtest", "forupdate", OK, "PostgreSQL only: SELECT ... FOR UPDATE under load"},
}

// Want returns the verdict a phase must give. It panics on a phase that is
// not listed: a program that asks about a phase the lesson does not know is
// a programming error, not bad input.
func Want(step, phase string) string {
	p, ok := Lookup(step, phase)
	if !ok {
		panic(fmt.Sprintf("lesson: no phase %q in step %q", phase, step))
	}
	return p.Want
}

// Lookup finds a phase of a step in Phases.
func Lookup(step, phase string) (Phase, bool) {
	for _, p := range Phases {
		if p.Step == step && p.Phase == phase {
			return p, true
		}
	}
	return Phase{}, false
}

// Result is what a program reports for one phase, in its -json output and
// to the workshop run.
type Result struct {
	Step    string `json:"step"`
	Phase   string `json:"phase"`
	Check   string `json:"check"`   // the check line, e.g. "accepted=10 balance=0 expected=0 OK"
	Verdict string `json:"verdict"` // OK or BROKEN, as Check ends
	Want    string `json:"want"`    // what Phases says it must be
}

// Match reports whether the phase gave the verdict the lesson promises.
func (r Result) Match() bool { return r.Verdict == r.Want }

// NewResult fills Want from Phases and Verdict from ok.
func NewResult(step, phase, check string, ok bool) Result {
	v := Broken
	if ok {
		v = OK
	}
	return Result{Step: step, Phase: phase, Check: check, Verdict: v, Want: Want(step, phase)}
}
