package lesson

import (
	"slices"
	"testing"
)

func TestPhases_areWellFormed(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range append(slices.Clone(Phases), LoadTest...) {
		id := p.Step + "/" + p.Phase
		if seen[id] {
			t.Errorf("%s is listed twice", id)
		}
		seen[id] = true
		if p.Want != OK && p.Want != Broken {
			t.Errorf("%s: Want = %q, want OK or BROKEN", id, p.Want)
		}
		if p.What == "" {
			t.Errorf("%s: no description", id)
		}
	}
}

func TestNewResult(t *testing.T) {
	tests := []struct {
		step, phase string
		ok          bool
		verdict     string
		match       bool
	}{
		{"step1-race", "race", false, Broken, true},
		{"step1-race", "race", true, OK, false},
		{"step2-lock", "lock", true, OK, true},
		{"step2-lock", "lock", false, Broken, false},
	}
	for _, tt := range tests {
		r := NewResult(tt.step, tt.phase, "check", tt.ok)
		if r.Verdict != tt.verdict || r.Match() != tt.match {
			t.Errorf("NewResult(%s, %s, ok=%v) = verdict %s, match %v; want %s, %v",
				tt.step, tt.phase, tt.ok, r.Verdict, r.Match(), tt.verdict, tt.match)
		}
	}
}

func TestWant_panicsOnAnUnknownPhase(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Want of an unknown phase did not panic")
		}
	}()
	Want("step2-lock", "no-such-phase")
}

func TestLookup_findsTheDrillsCellsAsPhases(t *testing.T) {
	p, ok := Lookup(DrillStep, DrillPhase("pause", "lock"))
	if !ok || p.Want != Broken || p.What == "" {
		t.Errorf("Lookup(drill, pause/lock) = %+v, %v; want the BROKEN cell", p, ok)
	}
	if p, ok := Lookup(DrillStep, DrillPhase("restart", "fenced")); !ok || p.Want != OK {
		t.Errorf("Lookup(drill, restart/fenced) = %+v, %v; want the OK cell", p, ok)
	}
	if _, ok := Lookup(DrillStep, "pause"); ok {
		t.Error("Lookup(drill, pause) found a cell without a strategy")
	}
}

func TestDrillWant_redlockCells(t *testing.T) {
	for _, tt := range []struct{ nemesis, strategy, want string }{
		{"restart", "redlock", Broken},
		{"restart", "redlock-fenced", OK},
		{"pause", "redlock", Broken},
		{"pause", "redlock-fenced", OK},
	} {
		if c, ok := DrillWant(tt.nemesis, tt.strategy); !ok || c.Want != tt.want || c.Share != 1 {
			t.Errorf("DrillWant(%s, %s) = %+v, %v; want %s in every seed", tt.nemesis, tt.strategy, c, ok, tt.want)
		}
	}
	if _, ok := DrillWant("failover", "redlock"); ok {
		t.Error("DrillWant(failover, redlock) found a cell; a failover does not apply to Redlock")
	}
}

// TestHistories_agreeWithTheBalanceVerdicts: every phase of LoadTest and
// every drill cell has a history verdict, its balance verdict's pair
// (BROKEN: not linearizable, OK: linearizable); the root's steps record
// none. The stale replica read, where the two differ, is
// internal/history's test.
func TestHistories_agreeWithTheBalanceVerdicts(t *testing.T) {
	pair := map[string]string{Broken: NotLinearizable, OK: Linearizable}
	for _, p := range LoadTest {
		if w, ok := WantHistory(p.Step, p.Phase); !ok || w != pair[p.Want] {
			t.Errorf("%s/%s: history %q (%v), want %q beside %s", p.Step, p.Phase, w, ok, pair[p.Want], p.Want)
		}
	}
	for _, p := range Phases {
		if _, ok := WantHistory(p.Step, p.Phase); ok {
			t.Errorf("%s/%s has a history verdict, but the root's steps record no history", p.Step, p.Phase)
		}
	}
	for _, c := range Drills {
		w, ok := WantHistory(DrillStep, DrillPhase(c.Nemesis, c.Strategy))
		if !ok || w != pair[c.Want] {
			t.Errorf("drill %s/%s: history %q (%v), want %q beside %s", c.Nemesis, c.Strategy, w, ok, pair[c.Want], c.Want)
		}
	}
	if w, _ := WantHistory(LoadTestStep, "none"); w != NotLinearizable {
		t.Errorf("none: got %q, want %q", w, NotLinearizable)
	}
	if w, _ := WantHistory(LoadTestStep, "fenced"); w != Linearizable {
		t.Errorf("fenced: got %q, want %q", w, Linearizable)
	}
}

// The partition: lock and fair break with two primaries granting at once,
// the fence holds, and Redlock split 1 | 2 keeps one holder. With
// min-replicas-to-write no cell breaks for sure, and no fence or version
// cell is anything but OK in every seed.
func TestDrillWant_partitionCells(t *testing.T) {
	for _, tt := range []struct {
		nemesis, strategy, want string
		share                   float64
	}{
		{"partition", "lock", Broken, 1},
		{"partition", "fenced", OK, 1},
		{"partition", "fair", Broken, 1},
		{"partition", "redlock", OK, 1},
		{"partition", "redlock-fenced", OK, 1},
		{"partition-min-replicas", "fenced", OK, 1},
		{"partition-min-replicas", "lock", OK, 0.5},
	} {
		if c, ok := DrillWant(tt.nemesis, tt.strategy); !ok || c.Want != tt.want || c.Share != tt.share {
			t.Errorf("DrillWant(%s, %s) = %+v, %v; want %s in a share %v of seeds", tt.nemesis, tt.strategy, c, ok, tt.want, tt.share)
		}
	}
	for _, c := range Drills {
		if (c.Strategy == "fenced" || c.Strategy == "version" || c.Strategy == "redlock-fenced") && (c.Want != OK || c.Share != 1) {
			t.Errorf("%s/%s: %s in a share %v of seeds; a fence and a version are OK in every seed", c.Nemesis, c.Strategy, c.Want, c.Share)
		}
	}
	if _, ok := DrillWant("partition-min-replicas", "redlock"); ok {
		t.Error("DrillWant(partition-min-replicas, redlock) found a cell; Redlock's nodes have no replicas")
	}
}

// The lab's load test runs the root's step 6's strategies and more: each
// of step 6's phases is one of its phases, with the same verdict.
func TestLoadTest_coversStep6(t *testing.T) {
	for _, p := range Phases {
		if p.Step != "step6-loadtest" {
			continue
		}
		if l, ok := Lookup(LoadTestStep, p.Phase); !ok || l.Want != p.Want {
			t.Errorf("step6-loadtest %s wants %s; the load test's %+v (%v)", p.Phase, p.Want, l, ok)
		}
	}
}

// Every former phase is one an earlier revision had: a phase it says the
// lesson has now is in Phases, in the same step, with the same verdict;
// one the lesson no longer has is not in Phases under its old name, or its
// name there means something else (step 5's phase 3).
func TestFormers_sayWhereEachPhaseWent(t *testing.T) {
	for _, f := range Formers {
		if f.Revision < 1 || f.Revision >= Revision || (f.Want != OK && f.Want != Broken) || f.What == "" {
			t.Errorf("%+v: want a revision from 1 to %d, a verdict and what it showed", f, Revision-1)
		}
		if f.Now == "" {
			continue
		}
		if p, ok := Lookup(f.Step, f.Now); !ok || p.Want != f.Want {
			t.Errorf("%s %s became %s: Lookup = %+v, %v; want the same verdict, %s", f.Step, f.Phase, f.Now, p, ok, f.Want)
		}
	}
	for _, tt := range []struct {
		revision    int
		step, phase string
		former, now string // former: "" when the phase means what it says; now: its name today
	}{
		{1, "step5-fencing", "3", "50 fenced spenders, some stalling past the TTL", ""},
		{1, "step5-fencing", "4", "no Redis: a write lands only if the row's version is still the one read", "3"},
		{1, "step6-loadtest", "fair", "the fair lock: waiters queue and a release hands off, under load", ""},
		{1, "step6-loadtest", "lock", "", ""},
		{1, "step5-fencing", "1b", "", ""},
		{2, "step5-fencing", "3", "", ""},
		{Revision, "step6-loadtest", "fair", "", ""},
	} {
		f, ok := Then(tt.revision, tt.step, tt.phase)
		if ok != (tt.former != "") || f.What != tt.former || f.Now != tt.now {
			t.Errorf("Then(%d, %s, %s) = %+v, %v; want %q, now %q", tt.revision, tt.step, tt.phase, f, ok, tt.former, tt.now)
		}
	}
}
