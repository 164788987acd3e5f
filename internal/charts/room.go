package charts

import (
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"slices"
	"strings"

	"example.com/walletlock/internal/lesson"
)

// Machine is one participant's workshop run (cmd/workshop -json) as the
// room's page shows it: one column.
type Machine struct {
	Label       string // names the column; unique in the room
	File        string // the file it was read from
	Go          string
	OS          string
	CPUs        int
	Redis       string
	Postgres    string
	Started     string
	Phases      []lesson.Result
	Failures    []string
	Interrupted string          // the step Ctrl-C stopped; "": none
	Load        json.RawMessage // step 6's -json output; nil: step 6 did not report
}

// Matching counts the phases that gave the lesson's verdict.
func (m Machine) Matching() int {
	n := 0
	for _, r := range m.Phases {
		if r.Match() {
			n++
		}
	}
	return n
}

// WriteRoom writes the room's page: one column per machine, one row per
// phase with each machine's verdict, every verdict that differs from the
// lesson highlighted, and step 6's figures charted across the machines.
// Like WriteLoad's, the page fetches nothing.
func WriteRoom(w io.Writer, room []Machine) error {
	page := roomPage{Machines: room}
	page.Title = fmt.Sprintf("walletlock workshop: %d %s side by side", len(room), plural(len(room), "machine"))
	for _, key := range phaseKeys(room) {
		pr := phaseRow{Step: key.Step, Phase: key.Phase, Want: "?"}
		if p, ok := lesson.Lookup(key.Step, key.Phase); ok {
			pr.Want, pr.What = p.Want, p.What
		}
		for _, m := range room {
			c := verdictCell(m, key.Step, key.Phase)
			pr.Differs = pr.Differs || !c.Match
			pr.Cells = append(pr.Cells, c)
		}
		page.Phases = append(page.Phases, pr)
	}

	loads := make([]load, len(room))
	for i, m := range room {
		if m.Load == nil {
			continue
		}
		l, err := decodeLoad(m.Load)
		if err != nil {
			return fmt.Errorf("charts: %s: %w", m.File, err)
		}
		loads[i] = l.lastLevel()
	}
	var err error
	if page.Load, page.Charts, err = roomLoad(room, loads); err != nil {
		return err
	}
	return render(w, "room", page)
}

type roomPage struct {
	Title    string
	Machines []Machine
	Phases   []phaseRow
	Load     []loadLine
	Charts   []template.HTML
}

// phaseRow is one phase across the room.
type phaseRow struct {
	Step, Phase, Want, What string
	Differs                 bool // on some machine
	Cells                   []cell
}

// cell is one machine's verdicts of one phase: step 1 reports its phase
// once per run, so a cell may hold several.
type cell struct {
	Text   string // "BROKEN", "BROKEN ×3", "OK ×2, BROKEN ×1", "not reported"
	Checks string // the check lines, one per verdict
	Match  bool
}

// phaseKeys lists the phases of the room: the lesson's in its order, then
// any the lesson does not know (a participant ran another version).
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
	}
	return keys
}

func verdictCell(m Machine, step, phase string) cell {
	var verdicts, checks []string
	count := map[string]int{}
	c := cell{Match: true}
	for _, r := range m.Phases {
		if r.Step != step || r.Phase != phase {
			continue
		}
		if count[r.Verdict] == 0 {
			verdicts = append(verdicts, r.Verdict)
		}
		count[r.Verdict]++
		checks = append(checks, r.Check)
		c.Match = c.Match && r.Match()
	}
	if len(checks) == 0 {
		c.Text, c.Match = "not reported", false
		if m.Interrupted != "" {
			c.Text = "not run: interrupted"
		}
		return c
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

// lastLevel keeps each strategy's row at its highest level of contention:
// that is where a sweep is compared across machines.
func (l load) lastLevel() load {
	top := map[string]loadRow{}
	for _, r := range l.Rows {
		if t, ok := top[r.Strategy]; !ok || r.Workers >= t.Workers {
			top[r.Strategy] = r
		}
	}
	var rows []loadRow
	for _, s := range l.strategies() {
		rows = append(rows, top[s])
	}
	l.Rows = rows
	return l
}

// loadLine is one strategy of step 6 across the room.
type loadLine struct {
	Strategy string
	Cells    []cell
}

// roomLoad tables and charts step 6 across the machines: one series per
// machine, one group of bars per strategy.
func roomLoad(room []Machine, loads []load) ([]loadLine, []template.HTML, error) {
	var names, waiting []string
	for _, l := range loads {
		for _, r := range l.Rows {
			if !slices.Contains(names, r.Strategy) {
				names = append(names, r.Strategy)
			}
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	find := func(l load, s string) (loadRow, bool) {
		i := slices.IndexFunc(l.Rows, func(r loadRow) bool { return r.Strategy == s })
		if i < 0 {
			return loadRow{}, false
		}
		return l.Rows[i], true
	}
	var lines []loadLine
	for _, s := range names {
		line := loadLine{Strategy: s}
		for _, l := range loads {
			r, ok := find(l, s)
			if !ok {
				line.Cells = append(line.Cells, cell{Text: "not run"})
				continue
			}
			v, match := r.verdict()
			text := fmt.Sprintf("%.0f/s, %s", r.PerSecond, v)
			if r.LockWait != nil {
				text = fmt.Sprintf("%.0f/s, wait p99 %s, %s", r.PerSecond, ms(r.LockWait.P99), v)
				if !slices.Contains(waiting, s) {
					waiting = append(waiting, s)
				}
			}
			line.Cells = append(line.Cells, cell{Text: text, Checks: r.Check, Match: match})
		}
		lines = append(lines, line)
	}

	var rate, eff, wait []series
	for i, l := range loads {
		rs, es, ws := series{name: room[i].Label}, series{name: room[i].Label}, series{name: room[i].Label}
		for _, s := range names {
			r, ok := find(l, s)
			rs.values = append(rs.values, value(ok, r.PerSecond))
			es.values = append(es.values, value(ok && r.Ceiling > 0, 100*r.Efficiency))
			if slices.Contains(waiting, s) {
				ws.values = append(ws.values, value(ok && r.LockWait != nil, waitP99(r)))
			}
		}
		rate, eff, wait = append(rate, rs), append(eff, es), append(wait, ws)
	}
	var out []template.HTML
	for _, c := range []struct {
		title, y   string
		categories []string
		ss         []series
	}{
		{"Step 6: accepted spends per second", "spends/s", names, rate},
		{"Step 6: share of the serial ceiling", "%", names, eff},
		{"Step 6: p99 lock wait", "ms", waiting, wait},
	} {
		if len(c.categories) == 0 {
			continue
		}
		svg, err := bars(c.title, c.y, c.categories, c.ss)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, svg)
	}
	return lines, out, nil
}
