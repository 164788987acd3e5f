package charts

import (
	"cmp"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
)

// WriteRoom writes the room's page: one column per machine, one row per
// phase with each machine's cell of r, every cell that differs from the
// lesson highlighted and every phase left out shown as not checked, then
// how each machine ran step 6 and its figures charted across the
// machines. Like WriteLoad's, the page fetches nothing.
func WriteRoom(w io.Writer, r *Room) error { return WriteLive(w, r, nil) }

// WriteLive writes the room's page (WriteRoom) with what the live room
// adds: see Live.
func WriteLive(w io.Writer, r *Room, live *Live) error {
	page := roomPage{Room: r, SameLoad: r.SameLoad(), Live: live}
	page.Title = fmt.Sprintf("walletlock workshop: %d %s side by side", len(r.Machines), Plural(len(r.Machines), "machine"))
	if live != nil {
		page.Title = fmt.Sprintf("walletlock workshop, live: %d %s so far", len(r.Machines), Plural(len(r.Machines), "machine"))
		page.Refresh = live.Refresh
	}
	usual := usualSetup(r.Setups)
	for i, m := range r.Machines {
		s := r.Setups[i]
		page.Columns = append(page.Columns, column{Machine: m, Tally: r.Tallies[i].String(), Differs: r.Differs(i),
			Setup: s, OddLoad: !page.SameLoad && s != "" && s != usual})
		page.Setup = cmp.Or(page.Setup, s)
	}
	var err error
	if page.Load, page.Charts, err = roomLoad(r); err != nil {
		return err
	}
	return render(w, "room", page)
}

type roomPage struct {
	*Room
	Title    string
	Columns  []column
	SameLoad bool
	Setup    string // the first machine's step 6 load, which with SameLoad is every machine's
	Load     []loadLine
	Charts   []template.HTML
	Live     *Live // nil: a page made once (make compare)
	Refresh  int   // how often the page loads itself again; 0: never
}

// HasFormer reports whether a row is a phase the lesson no longer has.
func (p roomPage) HasFormer() bool {
	return slices.ContainsFunc(p.Phases, func(r PhaseRow) bool { return r.Former })
}

// HasCeiling reports whether a machine's step 6 gives the serial ceiling
// (files of the lab's load test do; the article's step 6 does not).
func (p roomPage) HasCeiling() bool {
	return slices.ContainsFunc(p.loads, func(l load) bool {
		return slices.ContainsFunc(l.Rows, func(r loadRow) bool { return r.Ceiling > 0 })
	})
}

// column is one machine's header and summary on the page.
type column struct {
	Machine
	Tally   string
	Differs bool
	Setup   string // how it ran step 6; "": it did not report step 6
	OddLoad bool   // its load is not the one most machines ran
}

// usualSetup is the load most machines ran step 6 under, or "" when no
// one load is the most common: then every machine's is marked.
func usualSetup(setups []string) string {
	count := map[string]int{}
	for _, s := range setups {
		if s != "" {
			count[s]++
		}
	}
	usual, most, tie := "", 0, false
	for s, n := range count {
		switch {
		case n > most:
			usual, most, tie = s, n, false
		case n == most:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return usual
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
	Cells    []Cell
}

// roomLoad tables and charts step 6 across the machines: one series per
// machine, one group of bars per strategy. A cell is coloured by the
// judgement of its phase, so that the table agrees with the phases above.
func roomLoad(room *Room) ([]loadLine, []template.HTML, error) {
	var rows []loadRow
	for _, l := range room.loads {
		rows = append(rows, l.Rows...)
	}
	names := load{Rows: rows}.strategies()
	var waiting []string
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
		for i, l := range room.loads {
			c, judged := room.stepSix(i, s)
			r, ok := find(l, s)
			switch {
			case !ok && c.Status == LeftOut:
				c.Text = "left out"
			case !ok:
				c = Cell{Status: c.Status, Text: "not run"}
			default:
				v, match := r.verdict()
				if !judged { // no phase to agree with: the row's own verdict
					c.Status = OtherVerdict
					if match {
						c.Status = Match
					}
				}
				c.Checks = ""
				c.Text = fmt.Sprintf("%.0f/s, %s", r.PerSecond, v)
				if w := waitP99(r); !math.IsNaN(w) {
					c.Text = fmt.Sprintf("%.0f/s, wait p99 %s, %s", r.PerSecond, FormatMS(w), v)
					if !slices.Contains(waiting, s) {
						waiting = append(waiting, s)
					}
				}
			}
			line.Cells = append(line.Cells, c)
		}
		lines = append(lines, line)
	}

	// The locks on one scale; none (the control, grey and named BROKEN)
	// and atomic, many times faster, on one of their own; the share of
	// the ceiling for the locks only (none passes 100%, atomic has none).
	locks, unlocked, labels, grey := apart(names)
	perMachine := func(strategies []string, pick func(loadRow, bool) float64) []series {
		var out []series
		for i, l := range room.loads {
			ss := series{name: room.Machines[i].Label}
			for _, s := range strategies {
				r, ok := find(l, s)
				ss.values = append(ss.values, pick(r, ok))
			}
			out = append(out, ss)
		}
		return out
	}
	rate := func(r loadRow, ok bool) float64 { return value(ok, r.PerSecond) }
	var out []template.HTML
	for _, c := range []struct {
		title, y   string
		categories []string
		ss         []series
		grey       map[int]bool
	}{
		{"Step 6: p99 wait", "ms", waiting, perMachine(waiting, func(r loadRow, ok bool) float64 { return value(ok, waitP99(r)) }), nil},
		{"Step 6: accepted spends per second, the locks", "spends/s", locks, perMachine(locks, rate), nil},
		{"Step 6: accepted spends per second without a lock (own scale)", "spends/s", labels, perMachine(unlocked, rate), grey},
		{"Step 6: the locks' share of the serial ceiling", "%", locks, perMachine(locks, func(r loadRow, ok bool) float64 { return value(ok && r.Ceiling > 0, 100*r.Efficiency) }), nil},
	} {
		if len(c.categories) == 0 || !drawn(c.ss) {
			continue
		}
		svg, err := bars(c.title, c.y, c.categories, c.ss, c.grey, math.NaN())
		if err != nil {
			return nil, nil, err
		}
		out = append(out, svg)
	}
	return lines, out, nil
}

// stepSix is machine i's cell of step 6's phase s, as the room judged it,
// and whether the room has that phase: the lesson's, or one an earlier
// revision had (redsync, redlock and fair were step 6's then).
func (r *Room) stepSix(i int, s string) (Cell, bool) {
	c, judged := Cell{Status: Absent}, false // a strategy no machine reported as a phase
	for _, p := range r.Phases {
		if p.Step != "step6-loadtest" || p.Phase != s {
			continue
		}
		if !judged || c.Status == Absent {
			c, judged = p.Cells[i], true
		}
	}
	return c, judged
}

// drawn reports whether any series has a value to draw.
func drawn(ss []series) bool {
	for _, s := range ss {
		if slices.ContainsFunc(s.values, func(v float64) bool { return !math.IsNaN(v) }) {
			return true
		}
	}
	return false
}
