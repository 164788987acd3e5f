package workshop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
)

// Compare reads the JSON files a room's machines wrote (make workshop
// JSON=1), judges them against the lesson once (charts.Judge), prints one
// line per machine and the phases that differ or were left out, and with
// page != "" writes the room's HTML page of the same judgement there. It
// runs nothing and needs no service. A file it cannot read stops it with
// an error naming the file before it prints anything, and so does a page
// it cannot draw; machines that differ from the lesson do not: showing
// them is the point.
func Compare(files []string, page string, stdout io.Writer) error {
	var machines []charts.Machine
	for _, name := range files {
		m, err := readMachine(name)
		if err != nil {
			return err
		}
		machines = append(machines, m)
	}
	uniqueLabels(machines)
	room, err := charts.Judge(machines)
	if err != nil {
		return err
	}
	var html bytes.Buffer
	if page != "" {
		if err := charts.WriteRoom(&html, room); err != nil {
			return err
		}
	}
	printRoom(stdout, room)
	if page == "" {
		return nil
	}
	if err := os.WriteFile(page, html.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", harness.Printable(page), err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", harness.Printable(page))
	return nil
}

// readMachine reads one workshop JSON file, every text in it made
// printable (harness.Printable): a participant's file reaches the
// facilitator's terminal. A file of another program (step 6's -json,
// say), of a newer format, or with a step 6 report the page cannot show
// is refused, naming the file.
func readMachine(name string) (charts.Machine, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return charts.Machine{}, fmt.Errorf("read %s: %w", harness.Printable(name), err)
	}
	return parseMachine(data, name)
}

// parseMachine is readMachine of a document already read, from the file
// name (or, for one sent to the live room, the file it will be saved as).
func parseMachine(data []byte, name string) (charts.Machine, error) {
	shown := harness.Printable(name)
	var rep Doc
	if err := json.Unmarshal(data, &rep); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return charts.Machine{}, fmt.Errorf("read %s: not JSON: %v", shown, err)
		}
		return charts.Machine{}, fmt.Errorf("read %s: not a workshop JSON file (make workshop JSON=1 writes one)", shown)
	}
	if rep.Go == "" || rep.Steps == nil {
		return charts.Machine{}, fmt.Errorf("read %s: not a workshop JSON file (make workshop JSON=1 writes one)", shown)
	}
	if rep.Format > FormatVersion {
		return charts.Machine{}, fmt.Errorf("read %s: format %d is newer than this workshop reads (%d): update walletlock", shown, rep.Format, FormatVersion)
	}
	p := harness.Printable
	m := charts.Machine{
		Label: p(rep.Host), File: p(filepath.Base(name)),
		Go: p(rep.Go), OS: p(rep.OS), CPUs: rep.CPUs, Redis: p(rep.Redis), Postgres: p(rep.Postgres),
		Started:     rep.Started.Format("2006-01-02 15:04 MST"),
		Interrupted: p(rep.Interrupted),
		Load:        rep.Steps["step6-loadtest"],
		LoadArgs:    rep.Args["step6-loadtest"],
		Lesson:      rep.Lesson,
	}
	if m.Label == "" { // written before the label existed
		m.Label = p(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "workshop-"), ".json"))
	}
	for _, f := range rep.Failures {
		m.Failures = append(m.Failures, p(f))
	}
	for _, r := range rep.Phases {
		r.Step, r.Phase, r.Check, r.Verdict, r.Want = p(r.Step), p(r.Phase), p(r.Check), p(r.Verdict), p(r.Want)
		m.Phases = append(m.Phases, r.Result)
	}
	// What a step left out it said in its own output ("left_out": the lab's
	// step 6 of the lesson's first revision, without its Redlock nodes).
	for step, out := range rep.Steps {
		var left struct {
			LeftOut map[string]string `json:"left_out"`
		}
		if step == lesson.DrillStep || json.Unmarshal(out, &left) != nil {
			continue
		}
		for phase, why := range left.LeftOut {
			if m.LeftOut == nil {
				m.LeftOut = map[string]string{}
			}
			m.LeftOut[p(step)+"/"+p(phase)] = p(why)
		}
	}
	if m.Load != nil {
		if err := charts.CheckLoad(m.Load); err != nil {
			return charts.Machine{}, fmt.Errorf("read %s: step 6: %v", shown, strings.TrimPrefix(err.Error(), "charts: "))
		}
	}
	return m, nil
}

// uniqueLabels tells apart files with the same host label (one machine
// run twice): both are shown, named by their files too, and numbered if
// even those are the same.
func uniqueLabels(room []charts.Machine) {
	for _, suffix := range []func(i int) string{
		func(i int) string { return " (" + room[i].File + ")" },
		func(i int) string { return fmt.Sprintf(" #%d", i+1) },
	} {
		count := map[string]int{}
		for _, m := range room {
			count[m.Label]++
		}
		for i, m := range room {
			if count[m.Label] > 1 {
				room[i].Label += suffix(i)
			}
		}
	}
}

// printRoom is the terminal's summary of the room's judgement, the one
// the page shows: one line per machine, the phases that differ from the
// lesson or were left out, and how step 6 ran when not alike everywhere.
func printRoom(w io.Writer, room *charts.Room) {
	ms := room.Machines
	fmt.Fprintf(w, "%d %s:\n", len(ms), charts.Plural(len(ms), "machine"))
	tab := harness.NewTable(w, "  ")
	for i, m := range ms {
		tab.Row(m.Label, fmt.Sprintf("%s %s, %d CPUs, Redis %s, PostgreSQL %s", m.Go, m.OS, m.CPUs, m.Redis, m.Postgres), room.Tallies[i])
	}
	tab.Flush()
	differ, left := 0, 0
	for i := range ms {
		if room.Differs(i) {
			differ++
		}
		left += room.Tallies[i][charts.LeftOut]
	}
	switch {
	case differ == 0 && left == 0:
		fmt.Fprintln(w, "Every machine gave every verdict the lesson promises.")
	case differ == 0:
		fmt.Fprintf(w, "No machine differs from the lesson, but %d %s left out, not checked:\n", left, charts.Plural(left, "phase was", "phases were"))
	default:
		fmt.Fprintf(w, "%d of %d machines differ from the lesson:\n", differ, len(ms))
	}
	for i, m := range ms {
		for _, ph := range room.Phases {
			c := ph.Cells[i]
			switch c.Status {
			case charts.OtherVerdict:
				fmt.Fprintf(w, "%s: %s phase %s gave %s, the lesson says %s: %s\n", m.Label, ph.Step, ph.Phase, c.Text, ph.Want, strings.ReplaceAll(c.Checks, "\n", "; "))
			case charts.NotReported:
				fmt.Fprintf(w, "%s: %s phase %s: not reported (the lesson says %s)\n", m.Label, ph.Step, ph.Phase, ph.Want)
			case charts.LeftOut:
				former := ""
				if ph.Former {
					former = " (no longer in the lesson)"
				}
				fmt.Fprintf(w, "%s: %s phase %s%s: left out, not checked: %s\n", m.Label, ph.Step, ph.Phase, former, c.Checks)
			}
		}
		for _, f := range m.Failures {
			fmt.Fprintf(w, "%s: %s\n", m.Label, f)
		}
		if m.Interrupted != "" {
			fmt.Fprintf(w, "%s: interrupted during %s\n", m.Label, m.Interrupted)
		}
	}
	printFormer(w, room)
	if !room.SameLoad() {
		fmt.Fprintln(w, "Step 6 ran under different loads, so its rates do not compare:")
		tab := harness.NewTable(w, "  ")
		for i, m := range ms {
			if s := room.Setups[i]; s != "" {
				tab.Row(m.Label, s)
			}
		}
		tab.Flush()
	}
}

// printFormer names the phases the lesson no longer has that machines of
// an earlier version gave, with what each gave: shown, not judged.
func printFormer(w io.Writer, room *charts.Room) {
	var rows []charts.PhaseRow
	for _, ph := range room.Phases {
		if ph.Former && slices.ContainsFunc(ph.Cells, func(c charts.Cell) bool { return c.Status == charts.Former }) {
			rows = append(rows, ph)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "%d %s no longer in the lesson, from files of an earlier version (shown, not judged):\n", len(rows), charts.Plural(len(rows), "phase is", "phases are"))
	for _, ph := range rows {
		var gave []string
		for i, c := range ph.Cells {
			if c.Status == charts.Former {
				gave = append(gave, room.Machines[i].Label+" "+c.Text)
			}
		}
		fmt.Fprintf(w, "  %s phase %s (%s): %s\n", ph.Step, ph.Phase, ph.What, strings.Join(gave, "; "))
	}
}
