package charts

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/internal/loadtest"
)

// page is what a reader gets from a generated page: its text, and the
// elements that carry a class.
type page struct {
	text    string
	classed map[string][]string // class -> the text of each element with it
	svgs    int
}

// parsePage requires html to be well formed (every element closed, as
// strict XML), to fetch nothing (no script, no link, no src or href to
// another host, no url() or @import) and returns what it shows.
func parsePage(t *testing.T, html []byte) page {
	t.Helper()
	if !bytes.HasPrefix(html, []byte("<!DOCTYPE html>")) {
		t.Errorf("page starts %q, want <!DOCTYPE html>", html[:min(len(html), 40)])
	}
	for _, s := range []string{"@import", "url("} {
		if bytes.Contains(html, []byte(s)) {
			t.Errorf("page contains %q: it must fetch nothing", s)
		}
	}
	p := page{classed: map[string][]string{}}
	var text strings.Builder
	type open struct {
		name, class string
		start       int
	}
	var stack []open
	d := xml.NewDecoder(bytes.NewReader(html))
	d.Strict = true
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("page is not well formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			switch tok.Name.Local {
			case "script", "link", "iframe", "object", "embed", "img":
				t.Errorf("page has a <%s> element: it must fetch nothing", tok.Name.Local)
			case "svg":
				p.svgs++
			}
			o := open{name: tok.Name.Local, start: text.Len()}
			for _, a := range tok.Attr {
				if (a.Name.Local == "src" || a.Name.Local == "href") && (strings.Contains(a.Value, "//") || strings.Contains(a.Value, ":")) {
					t.Errorf("<%s %s=%q>: the page must fetch nothing", tok.Name.Local, a.Name.Local, a.Value)
				}
				if a.Name.Local == "class" {
					o.class = a.Value
				}
			}
			stack = append(stack, o)
		case xml.EndElement:
			o := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if o.class != "" {
				p.classed[o.class] = append(p.classed[o.class], text.String()[o.start:])
			}
			text.WriteString(" ")
		case xml.CharData:
			if len(stack) > 0 && stack[len(stack)-1].name != "style" {
				text.Write(tok)
			}
		}
	}
	p.text = strings.Join(strings.Fields(text.String()), " ")
	return p
}

func (p page) mustName(t *testing.T, what string, names ...string) {
	t.Helper()
	for _, n := range names {
		if !strings.Contains(p.text, n) {
			t.Errorf("page does not name the %s %q", what, n)
		}
	}
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeLoad(t *testing.T, report []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := WriteLoad(&b, report); err != nil {
		t.Fatalf("WriteLoad: %v", err)
	}
	return b.Bytes()
}

var oneRun = []string{"none", "lock", "redislock", "fenced", "version", "forupdate"}

func TestWriteLoad_oneRunShowsTheTableAndTwoCharts(t *testing.T) {
	p := parsePage(t, writeLoad(t, readTestdata(t, "step6.json")))
	p.mustName(t, "strategy", oneRun...)
	p.mustName(t, "chart", "Accepted spends per second", "p99 lock wait")
	if p.svgs != 2 {
		t.Errorf("%d charts, want 2: the rate and the p99 lock wait", p.svgs)
	}
	if strings.Contains(p.text, "against contention") || strings.Contains(p.text, "fair-queue bound") {
		t.Error("a single run shows sweep charts")
	}
	if got := p.classed["differs"]; len(got) != 0 {
		t.Errorf("rows marked as differing from the lesson: %q, want none (none is BROKEN as expected)", got)
	}
}

func TestWriteLoad_sweepChartsContentionAgainstTheBound(t *testing.T) {
	p := parsePage(t, writeLoad(t, readTestdata(t, "step6-sweep.json")))
	p.mustName(t, "strategy", "none", "lock", "redislock", "redsync", "fair", "atomic", "fenced", "version", "forupdate")
	p.mustName(t, "chart", "Efficiency against contention", "p99 lock wait against contention", "fair-queue bound", "2 workers", "50 workers")
	if p.svgs != 4 {
		t.Errorf("%d charts, want 4: rate, p99 wait, and both against contention", p.svgs)
	}
}

// A report from before the sweep, or one missing most keys, still draws:
// the page reads the keys it knows and takes the rest as absent.
func TestWriteLoad_readsAReportWithKeysMissing(t *testing.T) {
	report := `{"strategies": [{"strategy": "lock", "accepted_per_second": 100, "measured": true, "ok": true,
		"check": "accepted=100 balance=0 expected=0 OK", "lock_wait": {"p50_ms": 1, "p99_ms": 9}}], "extra": [1, 2]}`
	p := parsePage(t, writeLoad(t, []byte(report)))
	p.mustName(t, "strategy", "lock")
	if p.svgs != 2 {
		t.Errorf("%d charts, want 2", p.svgs)
	}
}

func TestWriteLoad_refusesWhatIsNotJSON(t *testing.T) {
	var b bytes.Buffer
	err := WriteLoad(&b, []byte("accepted=10 OK"))
	if err == nil || !strings.HasPrefix(err.Error(), "charts: ") {
		t.Errorf("WriteLoad(not JSON) = %v, want a charts: error", err)
	}
	if b.Len() > 0 {
		t.Errorf("WriteLoad(not JSON) wrote %d bytes, want none", b.Len())
	}
}

// A row that gives another verdict than the lesson's is marked, with the
// verdict; none's BROKEN is what the lesson expects and is not.
func TestWriteLoad_marksARowThatDiffersFromTheLesson(t *testing.T) {
	var rep map[string]any
	if err := json.Unmarshal(readTestdata(t, "step6.json"), &rep); err != nil {
		t.Fatal(err)
	}
	rows := rep["strategies"].([]any)
	lock := rows[1].(map[string]any)
	lock["ok"], lock["wallets_off"] = false, 2
	data, _ := json.Marshal(rep)
	p := parsePage(t, writeLoad(t, data))
	got := p.classed["differs"]
	if len(got) != 1 || !strings.Contains(got[0], "lock") || !strings.Contains(got[0], "BROKEN: 2 wallets off") {
		t.Errorf("rows marked as differing: %q, want lock's alone, BROKEN: 2 wallets off", got)
	}
}

func TestSaveLoad_writesTheFileOrNamesIt(t *testing.T) {
	var rep loadtest.Report
	if err := json.Unmarshal(readTestdata(t, "step6.json"), &rep); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "report.html")
	if err := SaveLoad(path, &rep); err != nil {
		t.Fatalf("SaveLoad: %v", err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	parsePage(t, html).mustName(t, "strategy", oneRun...)

	bad := filepath.Join(t.TempDir(), "no-such-dir", "report.html")
	if err := SaveLoad(bad, &rep); err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SaveLoad into a missing directory = %v, want an error naming %s", err, bad)
	}
}

// room is three machines that ran the whole lesson; the third's step 3
// phase 1 gave OK where the lesson says BROKEN, and it did not run step 6.
func room(t *testing.T) []Machine {
	t.Helper()
	load := readTestdata(t, "step6.json")
	var room []Machine
	for i, host := range []string{"ana-laptop", "bob-desktop", "room-pc-3"} {
		m := Machine{Label: host, File: "workshop-" + host + ".json", Go: "go1.26.8", OS: "linux/amd64", CPUs: 2 + 2*i,
			Redis: "7.0.15", Postgres: "15.18", Started: "2026-11-30 14:28 UTC", Load: load}
		for _, p := range lesson.Phases {
			check := "accepted=10 balance=0 expected=0 " + p.Want
			m.Phases = append(m.Phases, lesson.NewResult(p.Step, p.Phase, check, p.Want == lesson.OK))
		}
		room = append(room, m)
	}
	room[2].Phases[2].Verdict = lesson.OK
	room[2].Phases = room[2].Phases[:len(room[2].Phases)-6]
	room[2].Failures = []string{"step6-loadtest: exit status 1"}
	room[2].Load = nil
	return room
}

// writeRoom judges the machines and writes their page.
func writeRoom(t *testing.T, machines []Machine) []byte {
	t.Helper()
	r, err := Judge(machines)
	if err != nil {
		t.Fatalf("Judge: %v", err)
	}
	var b bytes.Buffer
	if err := WriteRoom(&b, r); err != nil {
		t.Fatalf("WriteRoom: %v", err)
	}
	return b.Bytes()
}

func TestWriteRoom_putsTheMachinesSideBySide(t *testing.T) {
	p := parsePage(t, writeRoom(t, room(t)))
	p.mustName(t, "machine", "ana-laptop", "bob-desktop", "room-pc-3")
	p.mustName(t, "strategy", oneRun...)
	p.mustName(t, "version", "go1.26.8", "7.0.15", "15.18")
	for _, ph := range lesson.Phases {
		p.mustName(t, "phase", ph.Step+" "+ph.Phase)
	}
	if p.svgs != 3 {
		t.Errorf("%d charts, want 3: rate, share of the ceiling, p99 lock wait", p.svgs)
	}
	// The cells that differ: step3-ttl 1 on room-pc-3, its six step 6
	// phases not reported, its phase count, and its step 6 strategies.
	var cells []string
	for _, c := range p.classed["differs"] {
		if !strings.Contains(c, "step") { // the cells, not their rows
			cells = append(cells, c)
		}
	}
	want := []string{"OK ✗ differs", "not reported ✗ differs", "not run"}
	for _, w := range want {
		found := false
		for _, c := range cells {
			found = found || strings.Contains(c, w)
		}
		if !found {
			t.Errorf("no highlighted cell says %q; highlighted: %q", w, cells)
		}
	}
	if n := strings.Count(strings.Join(cells, "|"), "✗"); n != 7 {
		t.Errorf("%d phase cells marked ✗, want 7 (one verdict and six unreported)", n)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1230: "1,230", 200520: "200,520", 1234567: "1,234,567", -1230: "-1,230"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
