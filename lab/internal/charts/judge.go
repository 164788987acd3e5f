package charts

import (
	"encoding/json"
	"fmt"
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
	// "step/phase", with why (step 6 leaves redlock out when its nodes
	// are not running): they were not checked.
	LeftOut     map[string]string
	Failures    []string
	Interrupted string          // the step Ctrl-C stopped; "": none
	Load        json.RawMessage // step 6's -json output; nil: step 6 did not report
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
	case c.Status == LeftOut || c.Status == Absent:
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
	Cells                   []Cell
}

// Differs reports whether the phase differs from the lesson on some
// machine.
func (p PhaseRow) Differs() bool {
	return slices.ContainsFunc(p.Cells, func(c Cell) bool { return c.Status.Differs() })
}

// Tally counts one machine's phases by status.
type Tally struct{ Match, OtherVerdict, NotReported, NotRun, LeftOut int }

// String is the machine's count, as the summary and the page give it:
// "18 of 19 phases as the lesson says, 1 left out, not checked".
func (t Tally) String() string {
	judged := t.Match + t.OtherVerdict + t.NotReported + t.NotRun
	s := fmt.Sprintf("%d of %d %s as the lesson says", t.Match, judged, plural(judged, "phase"))
	for _, part := range []struct {
		n    int
		what string
	}{{t.NotReported, "not reported"}, {t.NotRun, "not run"}, {t.LeftOut, "left out, not checked"}} {
		if part.n > 0 {
			s += fmt.Sprintf(", %d %s", part.n, part.what)
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
	for _, key := range phaseKeys(machines) {
		row := PhaseRow{Step: key.Step, Phase: key.Phase, Want: "?"}
		if p, ok := lesson.Lookup(key.Step, key.Phase); ok {
			row.Want, row.What = p.Want, p.What
		}
		for i, m := range machines {
			c := judge(m, key.Step, key.Phase)
			row.Cells = append(row.Cells, c)
			t := &r.Tallies[i]
			switch c.Status {
			case Match:
				t.Match++
			case OtherVerdict:
				t.OtherVerdict++
			case NotReported:
				t.NotReported++
			case NotRun:
				t.NotRun++
			case LeftOut:
				t.LeftOut++
			}
		}
		r.Phases = append(r.Phases, row)
	}
	for i, m := range machines {
		if m.Load == nil {
			continue
		}
		l, err := decodeLoad(m.Load)
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
	return t.OtherVerdict+t.NotReported+t.NotRun > 0 || len(m.Failures) > 0 || m.Interrupted != ""
}

// SameLoad reports whether every machine that reported step 6 ran it
// under the same load: otherwise their rates do not compare.
func (r *Room) SameLoad() bool {
	first := ""
	for _, s := range r.Setups {
		switch {
		case s == "":
		case first == "":
			first = s
		case s != first:
			return false
		}
	}
	return true
}

// phaseKeys lists the phases of the room: the lesson's in its order, then
// any the lesson does not know (a participant ran another version) or a
// step left out.
func phaseKeys(room []Machine) []lesson.Result {
	var keys []lesson.Result
	add := func(step, phase string) {
		k := lesson.Result{Step: step, Phase: phase}
		if !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	for _, p := range lesson.Phases {
		add(p.Step, p.Phase)
	}
	for _, m := range room {
		for _, r := range m.Phases {
			add(r.Step, r.Phase)
		}
		var left []string
		for k := range m.LeftOut {
			left = append(left, k)
		}
		slices.Sort(left)
		for _, k := range left {
			step, phase, _ := strings.Cut(k, "/")
			add(step, phase)
		}
	}
	return keys
}

// judge is one machine's cell of one phase.
func judge(m Machine, step, phase string) Cell {
	var verdicts, checks []string
	count := map[string]int{}
	c := Cell{Status: Match}
	for _, r := range m.Phases {
		if r.Step != step || r.Phase != phase {
			continue
		}
		if count[r.Verdict] == 0 {
			verdicts = append(verdicts, r.Verdict)
		}
		count[r.Verdict]++
		checks = append(checks, r.Check)
		if !r.Match() {
			c.Status = OtherVerdict
		}
	}
	if len(checks) == 0 {
		why, left := m.LeftOut[step+"/"+phase]
		switch {
		case left:
			return Cell{Status: LeftOut, Text: "left out, not checked", Checks: why}
		case m.Interrupted != "":
			return Cell{Status: NotRun, Text: "not run: interrupted"}
		case promised(step, phase):
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
	return c
}

// promised reports whether every run of the workshop must report the
// phase: those of lesson.Phases, as cmd/workshop's Missing holds a run to. The
// drill's cells are not: a run picks the few it runs.
func promised(step, phase string) bool {
	return slices.ContainsFunc(lesson.Phases, func(p lesson.Phase) bool { return p.Step == step && p.Phase == phase })
}
