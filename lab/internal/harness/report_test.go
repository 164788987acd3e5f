package harness

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/wallet"
)

// broken and ok are check lines for step3-ttl phase 1 (the lesson: BROKEN).
var (
	broken = wallet.Check(100, 10, wallet.Tally{Accepted: 3, Unknown: 0}, 80)
	ok     = wallet.Check(100, 10, wallet.Tally{Accepted: 3, Unknown: 0}, 70)
)

func finish(t *testing.T, r *Report, asJSON bool) (code int, stdout, stderr string) {
	t.Helper()
	var out, errs bytes.Buffer
	code = r.Finish(&out, &errs, asJSON)
	return code, out.String(), errs.String()
}

func TestFinishExitsZeroAndPrintsNothingWhenEveryPhaseMatches(t *testing.T) {
	r := NewReport("step3-ttl")
	r.AddAt("1", 0, broken, nil)
	r.AddAt("2", 0, ok, nil)
	if code, stdout, stderr := finish(t, r, false); code != 0 || stdout != "" || stderr != "" {
		t.Errorf("Finish = %d, stdout %q, stderr %q; want 0 and nothing printed", code, stdout, stderr)
	}
}

func TestFinishNamesEachMismatchAndExitsOne(t *testing.T) {
	r := NewReport("step3-ttl")
	r.AddAt("1", 0, ok, nil)
	r.AddAt("2", 0, ok, nil)
	code, _, stderr := finish(t, r, false)
	want := "step3-ttl: phase 1 gave OK, the lesson says BROKEN (work outlives the TTL with no watchdog: two holders at once); try the defaults\n"
	if code != 1 || stderr != want {
		t.Errorf("Finish = %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}

func TestFailPrintsTheErrorAndFinishExitsOne(t *testing.T) {
	r := NewReport("step2-lock")
	var errs bytes.Buffer
	r.Fail(&errs, errors.New("the lock key is still there"))
	r.AddAt("lock", 0, wallet.Check(100, 10, wallet.Tally{Accepted: 10, Unknown: 0}, 0), nil)
	if errs.String() != "step2-lock: the lock key is still there\n" {
		t.Errorf("Fail printed %q", errs.String())
	}
	if code, _, _ := finish(t, r, false); code != 1 {
		t.Errorf("Finish = %d, want 1", code)
	}
}

func TestInterruptedExits130AndHoldsNothingToTheLesson(t *testing.T) {
	r := NewReport("step3-ttl")
	r.AddAt("1", 0, broken, nil)
	r.Interrupted("2", broken, map[string]int{"releases": 1}) // BROKEN where OK is promised: not judged
	code, stdout, stderr := finish(t, r, true)
	if code != ExitInterrupted || stderr != "" {
		t.Fatalf("Finish = %d, stderr %q; want %d and nothing on stderr", code, stderr, ExitInterrupted)
	}
	var got struct {
		Interrupted bool             `json:"interrupted"`
		Phases      []map[string]any `json:"phases"`
		Cut         map[string]any   `json:"interrupted_phase"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatal(err)
	}
	if !got.Interrupted || len(got.Phases) != 1 || got.Cut["phase"] != "2" || got.Cut["releases"] != 1.0 {
		t.Errorf("got %s; want interrupted, phase 1 in phases, phase 2 with its figures as interrupted_phase", stdout)
	}
}

func TestInterruptWithoutAPhaseExits130(t *testing.T) {
	r := NewReport("step1-race")
	r.Interrupt()
	code, stdout, _ := finish(t, r, true)
	if code != ExitInterrupted || strings.Contains(stdout, "interrupted_phase") || !strings.Contains(stdout, `"phases":[]`) {
		t.Errorf("Finish = %d, JSON %s; want 130, empty phases and no interrupted_phase", code, stdout)
	}
}

func TestJSONIsOneObjectWithTheSetKeysAndFiguresInsideEachPhase(t *testing.T) {
	type figures struct {
		NotHeld int    `json:"releases_not_held"`
		Cause   string `json:"cause,omitempty"`
	}
	r := NewReport("step3-ttl")
	r.Set("redis_version", "7.0.15")
	r.Set("n", 3)
	r.AddAt("1", 0, broken, figures{NotHeld: 3})
	r.AddAt("2", 0, ok, nil)
	code, stdout, _ := finish(t, r, true)
	want := `{"step":"step3-ttl","redis_version":"7.0.15","n":3,"phases":[` +
		`{"step":"step3-ttl","phase":"1","check":"accepted=3 balance=80 expected=70 BROKEN","verdict":"BROKEN","want":"BROKEN","releases_not_held":3},` +
		`{"step":"step3-ttl","phase":"2","check":"accepted=3 balance=70 expected=70 OK","verdict":"OK","want":"OK"}],` +
		`"interrupted":false}` + "\n"
	if code != 0 || stdout != want {
		t.Errorf("Finish = %d, JSON\n%s\nwant 0 and\n%s", code, stdout, want)
	}
}

func TestFiguresThatAreNotAnObjectAreAFailure(t *testing.T) {
	r := NewReport("step1-race")
	r.AddAt("race", 0, broken, 7)
	if code, _, stderr := finish(t, r, true); code != 1 || !strings.Contains(stderr, "not a JSON object") {
		t.Errorf("Finish = %d, stderr %q; want 1 and the reason", code, stderr)
	}
}

// Step 6 runs each strategy at several worker counts: each phase's JSON
// says its level, and a line about a mismatch names it.
func TestAddAtGivesEachPhaseItsWorkersAndNamesTheLevel(t *testing.T) {
	r := NewReport("loadtest")
	r.AddAt("fair", 2, wallet.Check(100, 10, wallet.Tally{Accepted: 3, Unknown: 0}, 70), nil)
	r.AddAt("fair", 50, wallet.Check(100, 10, wallet.Tally{Accepted: 3, Unknown: 0}, 80), map[string]int{"n": 1})
	code, stdout, stderr := finish(t, r, true)
	want := "loadtest: phase fair at 50 workers gave BROKEN, the lesson says OK (the fair lock: waiters queue and a release hands off, under load); try the defaults\n"
	if code != 1 || stderr != want {
		t.Errorf("Finish = %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if !strings.Contains(stdout, `"want":"OK","workers":2}`) || !strings.Contains(stdout, `"want":"OK","workers":50,"n":1}`) {
		t.Errorf("JSON %s; want workers in each phase, before the figures", stdout)
	}
}

// A control (step 6's none) that happens to lose no update is held to the
// lesson in the JSON, but does not fail the run.
func TestControlThatDiffersDoesNotFail(t *testing.T) {
	r := NewReport("loadtest")
	r.Control("none")
	res := r.AddAt("none", 4, wallet.Check(100, 10, wallet.Tally{Accepted: 3, Unknown: 0}, 70), nil)
	if code, _, stderr := finish(t, r, false); code != 0 || stderr != "" || res.Match() {
		t.Errorf("Finish = %d, stderr %q, match %v; want 0, nothing, and no match in the result", code, stderr, res.Match())
	}
}

// The workshop collects phases that other programs judged: a mismatch is
// named with its step, and the hint is to run that step alone.
func TestAddResultKeepsTheStepAndNamesIt(t *testing.T) {
	r := NewReport("workshop")
	r.AddResult(lesson.NewResult("step2-lock", "lock", "accepted=10 balance=0 expected=0 OK", true))
	r.AddResult(lesson.NewResult("step3-ttl", "1", "accepted=3 balance=70 expected=70 OK", true))
	code, _, stderr := finish(t, r, false)
	want := "workshop: step3-ttl phase 1 gave OK, the lesson says BROKEN (work outlives the TTL with no watchdog: two holders at once); run it alone: go run ./cmd/step3-ttl\n"
	if code != 1 || stderr != want {
		t.Errorf("Finish = %d, stderr %q; want 1 and %q", code, stderr, want)
	}
	if p := r.Phases(); len(p) != 2 || p[0].Step != "step2-lock" {
		t.Errorf("Phases() = %+v, want both, with their own steps", p)
	}
}

func TestSetAllPutsAStructsKeysBesideStepAndPhases(t *testing.T) {
	r := NewReport("loadtest")
	err := r.SetAll(struct {
		Started     string `json:"started"`
		Interrupted bool   `json:"interrupted"` // the report's own: not set twice
		Rows        []int  `json:"strategies"`
	}{"2026-01-02T03:04:05Z", true, []int{1}})
	if err != nil {
		t.Fatal(err)
	}
	r.Set("more", 1)
	_, stdout, _ := finish(t, r, true)
	want := `{"step":"loadtest","started":"2026-01-02T03:04:05Z","strategies":[1],"more":1,"phases":[],"interrupted":false}` + "\n"
	if stdout != want {
		t.Errorf("JSON\n%s\nwant\n%s", stdout, want)
	}
	if err := r.SetAll([]int{1}); err == nil || !strings.Contains(err.Error(), "not a JSON object") {
		t.Errorf("SetAll(a slice) = %v, want an error saying it is not an object", err)
	}
}
