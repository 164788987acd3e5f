package charts

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"example.com/walletlock/lab/internal/lesson"
)

// Machine is one participant's workshop run (cmd/workshop -json): one
// column of the room.
type Machine struct {
	Label    string // names the column; unique in the room
	File     string // the file it was read from
	Go       string
	OS       string
	CPUs     int
	Redis    string
	Postgres string
	Started  string
	Phases   []lesson.Result
	// LeftOut names the phases a step said it did not run, keyed
	// "step/phase", with why (the lab's step 6, in files of the lesson's
	// first revision, left redlock out when its nodes were not running):
	// they were not checked.
	LeftOut     map[string]string
	Failures    []string
	Interrupted string          // the step Ctrl-C stopped; "": none
	Load        json.RawMessage // step 6's -json output; nil: step 6 did not report
	// LoadArgs are the flags the workshop ran step 6 with, beside -json
	// and -prefix: the article's step 6 does not print its load, so the
	// room reads it from them.
	LoadArgs []string
	// Lesson is the revision of the lesson the run was held to
	// (lesson.Revision); 0, a file written before the key, is 1. A phase
	// an earlier revision had and this one has not is shown apart
	// (lesson.Then).
	Lesson int
}

// revision is the lesson's revision m was held to.
func (m Machine) revision() int { return max(m.Lesson, 1) }

// key is a row of the room: a phase of the lesson, or (Former > 0) one
// that revision Former had and the lesson no longer has.
type key struct {
	Step, Phase string
	Former      int
}

// keyOf is the row where m's report of step's phase goes: an earlier
// revision's phase under today's name where it has one (lesson.Then),
// apart where the lesson no longer has it.
func (m Machine) keyOf(step, phase string) key {
	if f, ok := lesson.Then(m.revision(), step, phase); ok {
		if f.Now != "" {
			return key{step, f.Now, 0}
		}
		return key{step, phase, f.Revision}
	}
	return key{step, phase, 0}
}

// Status is where one machine stands on one phase of the lesson.
type Status int

const (
	Match        Status = iota // every verdict it gave is the lesson's
	OtherVerdict               // it gave another verdict
	NotReported                // the lesson promises the phase; the run gave none and did not say it left it out
	NotRun                     // the run was interrupted before the phase
	LeftOut                    // its step said it did not run the phase, and why: not checked
	Absent                     // a phase outside lesson.Phases (a drill cell, say) that this run did not have
	Former                     // a phase the lesson no longer has, which this run (of an earlier revision) gave: shown, not judged
)

// Differs reports whether the status sets the machine apart from the
// lesson. A phase left out is neither a difference nor a pass: it was not
// checked, and is shown as such.
func (s Status) Differs() bool { return s == OtherVerdict || s == NotReported || s == NotRun }

// Cell is one machine's judgement of one phase. Step 1 reports its phase
// once per run, so a cell may hold several verdicts.
type Cell struct {
	Status Status
	Text   string // "BROKEN", "BROKEN ×3", "OK ×2, BROKEN ×1", "not reported", "left out, not checked"
	Checks string // the check lines, one per verdict; for a phase left out, why
}

// Class is the cell's class on the page.
func (c Cell) Class() string {
	switch {
	case c.Status.Differs():
		return "differs"
	case c.Status == LeftOut || c.Status == Absent || c.Status == Former:
		return "unchecked"
	}
	return ""
}

// Mark ends the cell's text on the page: a tick, a cross, or nothing for
// a phase that was not checked.
func (c Cell) Mark() string {
	switch {
	case c.Status == Match:
		return "✓"
	case c.Status.Differs():
		return "✗ differs"
	}
	return ""
}

// PhaseRow is one phase across the room: a cell per machine.
type PhaseRow struct {
	Step, Phase, Want, What string
	// Former says the lesson no longer has the phase: an earlier
	// revision's, with the verdict it wanted then (Want) and what it
	// showed (What).
	Former bool
	Cells  []Cell
}

// Differs reports whether the phase differs from the lesson on some
// machine.
func (p PhaseRow) Differs() bool {
	return slices.ContainsFunc(p.Cells, func(c Cell) bool { return c.Status.Differs() })
}

// Tally counts one machine's phases by status.
type Tally [Former + 1]int

// String is the machine's count, as the summary and the page give it:
// "18 of 19 phases as the lesson says, 1 left out, not checked".
func (t Tally) String() string {
	judged := t[Match] + t[OtherVerdict] + t[NotReported] + t[NotRun]
	s := fmt.Sprintf("%d of %d %s as the lesson says", t[Match], judged, Plural(judged, "phase"))
	for _, part := range []struct {
		s    Status
		what string
	}{{NotReported, "not reported"}, {NotRun, "not run"}, {LeftOut, "left out, not checked"}, {Former, "no longer in the lesson"}} {
		if t[part.s] > 0 {
			s += fmt.Sprintf(", %d %s", t[part.s], part.what)
		}
	}
	return s
}

// Room is a room's machines judged against the lesson, once: the
// terminal's summary (cmd/workshop -compare) and the page (WriteRoom)
// both show this judgement, so that they cannot disagree.
type Room struct {
	Machines []Machine
	Phases   []PhaseRow // the lesson's phases in its order, then any it does not know
	Tallies  []Tally    // one per machine
	// Setups says how each machine ran step 6 (setupLine); "": it did
	// not report step 6.
	Setups []string
	loads  []load // each machine's step 6 at its highest level of contention
}

// Judge judges every machine's every phase. A machine's step 6 report
// that cannot be read is an error naming its file (CheckLoad finds it
// first).
func Judge(machines []Machine) (*Room, error) {
	r := &Room{Machines: machines, Tallies: make([]Tally, len(machines)),
		Setups: make([]string, len(machines)), loads: make([]load, len(machines))}
	for _, k := range phaseKeys(machines) {
		row := PhaseRow{Step: k.Step, Phase: k.Phase, Want: "?"}
		if f, ok := lesson.Then(k.Former, k.Step, k.Phase); ok && k.Former > 0 {
			row.Want, row.What, row.Former = f.Want, f.What, true
		} else if p, ok := lesson.Lookup(k.Step, k.Phase); ok {
			row.Want, row.What = p.Want, p.What
		}
		for i, m := range machines {
			c := judge(m, k)
			row.Cells = append(row.Cells, c)
			r.Tallies[i][c.Status]++
		}
		r.Phases = append(r.Phases, row)
	}
	for i, m := range machines {
		if m.Load == nil {
			continue
		}
		l, err := m.load()
		if err != nil {
			return nil, fmt.Errorf("charts: %s: %w", m.File, err)
		}
		r.Setups[i] = setupLine(l)
		r.loads[i] = l.lastLevel()
	}
	return r, nil
}

// CheckLoad reports whether step 6's -json output, as a workshop file
// holds it, is one the room's page can show.
func CheckLoad(data json.RawMessage) error {
	_, err := decodeLoad(data)
	return err
}

// Differs reports whether machine i differs from the lesson: a phase
// that differs, a step that failed, or Ctrl-C.
func (r *Room) Differs(i int) bool {
	t, m := r.Tallies[i], r.Machines[i]
	return t[OtherVerdict]+t[NotReported]+t[NotRun] > 0 || len(m.Failures) > 0 || m.Interrupted != ""
}

// SameLoad reports whether every machine that reported step 6 ran it
// under the same load: otherwise their rates do not compare.
func (r *Room) SameLoad() bool {
	first := ""
	for _, s := range r.Setups {
		first = cmp.Or(first, s)
		if s != "" && s != first {
			return false
		}
	}
	return true
}

// phaseKeys lists the rows of the room: the lesson's phases in its
// order, then any the lesson does not know (a participant ran another
// version) or a step left out, then those of an earlier revision that the
// lesson no longer has.
func phaseKeys(room []Machine) []key {
	var keys, former []key
	add := func(k key) {
		list := &keys
		if k.Former > 0 {
			list = &former
		}
		if !slices.Contains(*list, k) {
			*list = append(*list, k)
		}
	}
	for _, p := range lesson.Phases {
		add(key{p.Step, p.Phase, 0})
	}
	for _, m := range room {
		for _, r := range m.Phases {
			add(m.keyOf(r.Step, r.Phase))
		}
		for _, k := range slices.Sorted(maps.Keys(m.LeftOut)) {
			step, phase, _ := strings.Cut(k, "/")
			add(m.keyOf(step, phase))
		}
	}
	return append(keys, former...)
}

// judge is one machine's cell of one row: a phase of the lesson, judged,
// or one it no longer has, shown with the verdict it gave then.
func judge(m Machine, k key) Cell {
	var verdicts, checks []string
	count := map[string]int{}
	c := Cell{Status: Match}
	if k.Former > 0 {
		c.Status = Former
	}
	for _, r := range m.Phases {
		if m.keyOf(r.Step, r.Phase) != k {
			continue
		}
		if count[r.Verdict] == 0 {
			verdicts = append(verdicts, r.Verdict)
		}
		count[r.Verdict]++
		checks = append(checks, r.Check)
		if !r.Match() && c.Status != Former {
			c.Status = OtherVerdict
		}
	}
	if len(checks) == 0 {
		why, left := "", false
		for name, w := range m.LeftOut {
			step, phase, _ := strings.Cut(name, "/")
			if m.keyOf(step, phase) == k {
				why, left = w, true
			}
		}
		switch {
		case left:
			return Cell{Status: LeftOut, Text: "left out, not checked", Checks: why}
		case k.Former > 0:
		case m.Interrupted != "":
			return Cell{Status: NotRun, Text: "not run: interrupted"}
		case lesson.Since[[2]string{k.Step, k.Phase}] > m.revision():
			return Cell{Status: Absent, Text: "not in the version it ran"}
		case k.Former == 0 && promised(k.Step, k.Phase):
			return Cell{Status: NotReported, Text: "not reported"}
		}
		return Cell{Status: Absent, Text: "not in this run"}
	}
	var parts []string
	for _, v := range verdicts {
		if len(checks) == 1 {
			parts = append(parts, v)
		} else {
			parts = append(parts, fmt.Sprintf("%s ×%d", v, count[v]))
		}
	}
	c.Text, c.Checks = strings.Join(parts, ", "), strings.Join(checks, "\n")
	if c.Status == Former {
		c.Text += then(m, k)
	}
	return c
}

// then says how a phase the lesson no longer has stood with the lesson
// its run was held to: ", as the lesson then said", or what it then said.
func then(m Machine, k key) string {
	for _, r := range m.Phases {
		if m.keyOf(r.Step, r.Phase) == k && !r.Match() {
			return ", the lesson then said " + r.Want
		}
	}
	return ", as the lesson then said"
}

// promised reports whether every run of the workshop must report the
// phase: those of lesson.Phases, as cmd/workshop's Missing holds a run to. The
// drill's cells are not: a run picks the few it runs.
func promised(step, phase string) bool {
	return slices.ContainsFunc(lesson.Phases, func(p lesson.Phase) bool { return p.Step == step && p.Phase == phase })
}
