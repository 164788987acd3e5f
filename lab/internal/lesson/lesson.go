// Package lesson is the one place that says what each program must print:
// the verdict of every phase of the root's steps (Phases), of the lab's
// load test (LoadTest) and of the drill's cells (Drills). A test here runs
// the root's steps and holds them to Phases; cmd/loadtest and the drill
// exit 1 on a phase that gives another verdict; `make workshop` compares a
// room's runs with it, and reads the files of earlier revisions of it
// (Formers).
package lesson

import (
	"fmt"
	"slices"
	"strings"
)

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

// Phases lists every phase of the root's steps, in tutorial order: each
// step's s.Check(phase, want, ...) calls, one for one.
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
	{"step5-fencing", "1b", Broken, "the fence checked on write only: two writes computed from one read both land"},
	{"step5-fencing", "2", OK, "the same timeline with fencing: PostgreSQL refuses the stale write"},
	{"step5-fencing", "3", OK, "no Redis: a write lands only if the row's version is still the one read"},
	{"step6-loadtest", "none", Broken, "the control: no lock under load"},
	{"step6-loadtest", "lock", OK, "the hand-built lease under load"},
	{"step6-loadtest", "redislock", OK, "bsm/redislock under load"},
	{"step6-loadtest", "fenced", OK, "lease plus fencing checked by PostgreSQL under load"},
	{"step6-loadtest", "version", OK, "PostgreSQL only: version column under load"},
	{"step6-loadtest", "atomic", OK, "no lock: one Lua script checks and takes, under load"},
	{"step6-loadtest", "forupdate", OK, "PostgreSQL only: SELECT ... FOR UPDATE under load"},
}

// LoadTestStep is the step name of the lab's deep load test (cmd/loadtest)
// in LoadTest and in its reports.
const LoadTestStep = "loadtest"

// LoadTest lists the lab's load test's phases, one per strategy, in the
// order it runs them (the load test's strategies). Its none is a
// control, as step 6's: with little contention it may lose no update.
var LoadTest = []Phase{
	{LoadTestStep, "none", Broken, "the control: no lock under load"},
	{LoadTestStep, "lock", OK, "the hand-built lease under load"},
	{LoadTestStep, "redislock", OK, "bsm/redislock under load"},
	{LoadTestStep, "redsync", OK, "go-redsync's mutex on one Redis under load"},
	{LoadTestStep, "redlock", OK, "go-redsync's mutex on a majority of three independent Redis nodes (Redlock) under load"},
	{LoadTestStep, "fair", OK, "the fair lock: waiters queue and a release hands off, under load"},
	{LoadTestStep, "fenced", OK, "lease plus fencing checked by PostgreSQL under load"},
	{LoadTestStep, "atomic", OK, "no lock: one Lua script checks and takes, under load"},
	{LoadTestStep, "version", OK, "PostgreSQL only: version column under load"},
	{LoadTestStep, "forupdate", OK, "PostgreSQL only: SELECT ... FOR UPDATE under load"},
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

// Lookup finds a phase of a step in Phases or LoadTest, or a drill cell,
// a phase of DrillStep named "nemesis/strategy" (DrillPhase), whose Want
// is "" when it is not found.
func Lookup(step, phase string) (Phase, bool) {
	if step == DrillStep {
		nemesis, strategy, _ := strings.Cut(phase, "/")
		c, ok := DrillWant(nemesis, strategy)
		return Phase{DrillStep, phase, c.Want, c.What}, ok
	}
	all := slices.Concat(Phases, LoadTest)
	i := slices.IndexFunc(all, func(p Phase) bool { return p.Step == step && p.Phase == phase })
	if i < 0 {
		return Phase{}, false
	}
	return all[i], true
}

// Revision is the lesson's revision, which the workshop writes into its
// files so that an older file is read as it meant (see Formers). Revision
// 2 has the steps at the root.
const Revision = 2

// Former is a phase an earlier revision had that this one does not have,
// or has under another name.
type Former struct {
	Revision    int // the last revision that had it
	Step, Phase string
	Want, What  string // as that revision said
	// Now is the phase of Phases that shows the same lesson today, in the
	// same step; "" when the lesson no longer has it.
	Now string
}

// Formers lists, for every earlier revision, the phases it had that this
// one has not, or names otherwise. Every other phase of an earlier
// revision means what it means today.
var Formers = []Former{
	{1, "step5-fencing", "3", OK, "50 fenced spenders, some stalling past the TTL", ""},
	{1, "step5-fencing", "4", OK, "no Redis: a write lands only if the row's version is still the one read", "3"},
	{1, "step6-loadtest", "redsync", OK, "go-redsync's mutex on one Redis under load", ""},
	{1, "step6-loadtest", "redlock", OK, "go-redsync's mutex on a majority of three independent Redis nodes (Redlock) under load", ""},
	{1, "step6-loadtest", "fair", OK, "the fair lock: waiters queue and a release hands off, under load", ""},
}

// Since is the revision that first had a phase of Phases, for those an
// earlier revision did not have: a file of an earlier revision could not
// report them.
var Since = map[[2]string]int{
	{"step5-fencing", "1b"}: 2,
}

// Then says what a phase a file of an earlier revision reported means
// today: the Former it was, and whether it was one. A phase of a revision
// at or above Revision, or one Formers does not list, means what it says.
func Then(revision int, step, phase string) (Former, bool) {
	for _, f := range Formers {
		if revision <= f.Revision && f.Step == step && f.Phase == phase {
			return f, true
		}
	}
	return Former{}, false
}

// Result is what a program reports for one phase, in its -json output and
// to the workshop run.
type Result struct {
	Step    string `json:"step"`
	Phase   string `json:"phase"`
	Check   string `json:"check"`   // the check line, e.g. "accepted=10 balance=0 expected=0 OK"
	Verdict string `json:"verdict"` // OK or BROKEN, as Check ends
	Want    string `json:"want"`    // what the lesson says it must be
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

// DrillCell is what one strategy must give under one nemesis.
type DrillCell struct {
	Nemesis  string // none, pause, crash, restart, failover, cluster-failover, partition or partition-min-replicas
	Strategy string // lock, wait, fenced, version, fair, redlock or redlock-fenced
	Want     string // OK or BROKEN
	// Share is the least share of seeds that must give Want: 1 but where
	// the verdict is a race of timeouts (lock and fair under
	// partition-min-replicas), which a machine that stalls a holder past
	// its TTL can lose. Never below 1 for fenced or version.
	Share float64
	What  string // one line: why
}

// Drills is the drill's table, row by row as TUTORIAL.md shows it.
var Drills = []DrillCell{
	{"none", "lock", OK, 1, "the control: no fault, the lease serialises the spends"},
	{"none", "wait", OK, 1, "the control, waiting for the replica"},
	{"none", "fenced", OK, 1, "the control, fenced"},
	{"none", "version", OK, 1, "the control, PostgreSQL only"},
	{"none", "fair", OK, 1, "the control, the fair hand-off"},
	{"none", "redlock", OK, 1, "the control, Redlock over three nodes"},
	{"none", "redlock-fenced", OK, 1, "the control, Redlock and a fence from a PostgreSQL sequence"},
	{"pause", "lock", Broken, 1, "a holder stopped past its TTL writes a balance another holder has spent from"},
	{"pause", "wait", Broken, 1, "the replica had the lock; waiting for it does nothing for a stopped holder"},
	{"pause", "fenced", OK, 1, "the next holder's claim moves the fence, and the stale write finds no row"},
	{"pause", "version", OK, 1, "the version moved on while the spender was stopped: its write is refused and retried"},
	{"pause", "fair", Broken, 1, "a fair queue hands the lock on at expiry just the same: no fence, lost update"},
	{"pause", "redlock", Broken, 1, "the lock expires on every node alike: a majority cannot wait for a stopped holder"},
	{"pause", "redlock-fenced", OK, 1, "the next holder's claim takes a higher number from the sequence: the stale write finds no row"},
	{"crash", "lock", OK, 1, "the killed holder wrote nothing; its lease expires and the others go on"},
	{"crash", "wait", OK, 1, "the same with a replica"},
	{"crash", "fenced", OK, 1, "the same with a fence"},
	{"crash", "version", OK, 1, "a killed spender leaves nothing half-written"},
	{"crash", "fair", OK, 1, "the queue skips the dead holder once its lease expires"},
	{"crash", "redlock", OK, 1, "the dead holder's lock expires on every node and the others go on"},
	{"crash", "redlock-fenced", OK, 1, "the same with a fence"},
	{"restart", "lock", Broken, 1, "Redis comes back empty and grants the held lock again: two holders, one lost update"},
	{"restart", "wait", Broken, 1, "the replica resyncs from the empty primary: waiting bought nothing"},
	{"restart", "fenced", OK, 1, "the fence counter restarts low, PostgreSQL refuses it, the holder raises it"},
	{"restart", "version", OK, 1, "no Redis in the path"},
	{"restart", "fair", Broken, 1, "the queue and the lock are gone: granted twice, as with lock"},
	{"restart", "redlock", Broken, 1, "a node was down when the lock was taken, one of the two that granted it restarts empty: a second client wins a majority, two holders"},
	{"restart", "redlock-fenced", OK, 1, "granted twice just the same, but the second holder's claim takes a higher number and the first one's write finds no row"},
	{"failover", "lock", Broken, 1, "the promoted replica never saw the lock and grants it again"},
	{"failover", "wait", OK, 1, "a holder whose WAIT timed out gave up before it wrote"},
	{"failover", "fenced", OK, 1, "the promoted counter lags, PostgreSQL refuses the old fence, the holder raises it"},
	{"failover", "version", OK, 1, "no Redis in the path"},
	{"failover", "fair", Broken, 1, "the promoted replica never saw the lock: granted twice, as with lock"},
	{"cluster-failover", "lock", Broken, 1, "the replica promoted for the wallet's slot never saw the lock and grants it again"},
	{"cluster-failover", "wait", OK, 1, "a holder whose WAIT timed out gave up before it wrote"},
	{"cluster-failover", "fenced", OK, 1, "the promoted counter lags, PostgreSQL refuses the old fence, the holder raises it"},
	{"cluster-failover", "version", OK, 1, "no Redis in the path"},
	{"cluster-failover", "fair", Broken, 1, "the promoted replica never saw the lock: granted twice, as with lock"},
	{"partition", "lock", Broken, 1, "the cut-off primary keeps granting the lock while the majority's new primary grants it too: two holders, lost updates"},
	{"partition", "wait", OK, 1, "the cut-off primary has no replica to acknowledge WAIT: its holders give up before they write"},
	{"partition", "fenced", OK, 1, "both primaries hand out fences, PostgreSQL takes each row's highest: the stale holder's write finds no row"},
	{"partition", "version", OK, 1, "no Redis in the path"},
	{"partition", "fair", Broken, 1, "two primaries, two queues: granted twice, as with lock"},
	{"partition", "redlock", OK, 1, "split 1 | 2, the isolated spender reaches one node of three and is granted nothing: one holder at a time"},
	{"partition", "redlock-fenced", OK, 1, "the same, and a fence besides"},
	{"partition-min-replicas", "lock", OK, 0.5, "the cut-off primary refuses writes (NOREPLICAS) a lag after its replicas went silent, before the majority promotes: no two primaries grant at once, a race of timeouts the drill wins unless the machine stalls a holder past its TTL"},
	{"partition-min-replicas", "wait", OK, 1, "as without min-replicas-to-write: WAIT finds no replica on the cut-off side"},
	{"partition-min-replicas", "fenced", OK, 1, "the fence would refuse whatever a wider window let through"},
	{"partition-min-replicas", "version", OK, 1, "no Redis in the path"},
	{"partition-min-replicas", "fair", OK, 0.5, "the same race of timeouts as lock"},
}

// DrillStep is the step name of the drill's cells in Lookup and Result.
const DrillStep = "drill"

// DrillPhase names a drill cell as a phase of DrillStep: "pause/lock".
func DrillPhase(nemesis, strategy string) string { return nemesis + "/" + strategy }

// DrillWant finds the cell of a nemesis and a strategy in Drills.
func DrillWant(nemesis, strategy string) (DrillCell, bool) {
	for _, c := range Drills {
		if c.Nemesis == nemesis && c.Strategy == strategy {
			return c, true
		}
	}
	return DrillCell{}, false
}

// What a history checker (internal/history) must say of a phase's record.
const (
	Linearizable    = "yes"
	NotLinearizable = "no"
)

// WantHistory returns the history verdict a phase must give, and whether
// it has one: the phases whose programs record a history are the lab's
// load test's (LoadTestStep) and the drill's cells (DrillStep); the
// root's steps record none. Each pairs with its balance verdict. Where the
// balance check is BROKEN the history is not linearizable: a lost update
// is two spends that read one balance, and the balance read back is one
// no order of the accepted spends leaves. Where a correct strategy is OK
// the history is linearizable: a refused stale write (a fenced drill
// cell) read a balance the wallet held while it waited. The case where
// the two differ, a refusal computed from a stale replica read (balance
// OK, linearizable=no), is no phase here: it is internal/history's
// stale-read test. The load test's none is a control, as in LoadTest:
// with little contention it may lose no update and give OK and yes.
func WantHistory(step, phase string) (string, bool) {
	p, ok := Lookup(step, phase)
	switch {
	case !ok || step != LoadTestStep && step != DrillStep:
		return "", false
	case p.Want == Broken:
		return NotLinearizable, true
	}
	return Linearizable, true
}
