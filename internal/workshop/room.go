package workshop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"example.com/walletlock/internal/charts"
)

// Compare reads the JSON files a room's machines wrote (make workshop
// JSON=1), prints one line per machine and the phases that differ from the
// lesson, and with page != "" writes the room's HTML page there. It runs
// nothing and needs no service. A file it cannot read stops it with an
// error naming the file, before it prints anything; machines that differ
// from the lesson do not: showing them is the point.
func Compare(files []string, page string, stdout io.Writer) error {
	var room []charts.Machine
	for _, name := range files {
		m, err := readMachine(name)
		if err != nil {
			return err
		}
		room = append(room, m)
	}
	uniqueLabels(room)
	printRoom(stdout, room)
	if page == "" {
		return nil
	}
	var b bytes.Buffer
	err := charts.WriteRoom(&b, room)
	if err == nil {
		err = os.WriteFile(page, b.Bytes(), 0o644)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", page, err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", page)
	return nil
}

// readMachine reads one workshop JSON file. A file of another program
// (step 6's -json, say) or of a newer format is refused, naming the file.
func readMachine(name string) (charts.Machine, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return charts.Machine{}, fmt.Errorf("read %s: %w", name, err)
	}
	var rep Doc
	if err := json.Unmarshal(data, &rep); err != nil {
		var syntax *json.SyntaxError
		if errors.As(err, &syntax) {
			return charts.Machine{}, fmt.Errorf("read %s: not JSON: %v", name, err)
		}
		return charts.Machine{}, fmt.Errorf("read %s: not a workshop JSON file (make workshop JSON=1 writes one)", name)
	}
	if rep.Go == "" || rep.Steps == nil {
		return charts.Machine{}, fmt.Errorf("read %s: not a workshop JSON file (make workshop JSON=1 writes one)", name)
	}
	if rep.Format > FormatVersion {
		return charts.Machine{}, fmt.Errorf("read %s: format %d is newer than this workshop reads (%d): update walletlock", name, rep.Format, FormatVersion)
	}
	m := charts.Machine{
		Label: rep.Host, File: filepath.Base(name),
		Go: rep.Go, OS: rep.OS, CPUs: rep.CPUs, Redis: rep.Redis, Postgres: rep.Postgres,
		Started:  rep.Started.Format("2006-01-02 15:04 MST"),
		Failures: rep.Failures, Interrupted: rep.Interrupted,
		Load: rep.Steps["step6-loadtest"],
	}
	if m.Label == "" { // written before the label existed
		m.Label = strings.TrimSuffix(strings.TrimPrefix(m.File, "workshop-"), ".json")
	}
	for _, r := range rep.Phases {
		m.Phases = append(m.Phases, r.Result)
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

// printRoom is the terminal's summary: one line per machine, and the
// phases that differ from the lesson.
func printRoom(w io.Writer, room []charts.Machine) {
	fmt.Fprintf(w, "%d %s:\n", len(room), plural(len(room), "machine"))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, m := range room {
		fmt.Fprintf(tw, "  %s\t%s %s, %d CPUs, Redis %s, PostgreSQL %s\t%d of %d verdicts as the lesson says\n",
			m.Label, m.Go, m.OS, m.CPUs, m.Redis, m.Postgres, m.Matching(), len(m.Phases))
	}
	tw.Flush()
	differ := 0
	for _, m := range room {
		if m.Matching() < len(m.Phases) || len(m.Failures) > 0 || m.Interrupted != "" {
			differ++
		}
	}
	if differ == 0 {
		fmt.Fprintln(w, "Every machine gave every verdict the lesson promises.")
	} else {
		fmt.Fprintf(w, "%d of %d machines differ from the lesson:\n", differ, len(room))
	}
	for _, m := range room {
		for _, r := range m.Phases {
			if !r.Match() {
				fmt.Fprintf(w, "%s: %s phase %s gave %s, the lesson says %s: %s\n", m.Label, r.Step, r.Phase, r.Verdict, r.Want, r.Check)
			}
		}
		for _, f := range m.Failures {
			fmt.Fprintf(w, "%s: %s\n", m.Label, f)
		}
		if m.Interrupted != "" {
			fmt.Fprintf(w, "%s: interrupted during %s\n", m.Label, m.Interrupted)
		}
	}
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
