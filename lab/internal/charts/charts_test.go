package charts

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/lesson"
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
	if err := WriteLoad(&b, report, ""); err != nil {
		t.Fatalf("WriteLoad: %v", err)
	}
	return b.Bytes()
}

var oneRun = []string{"none", "lock", "redislock", "fenced", "version", "forupdate"}

func TestWriteLoad_oneRunShowsTheTableAndThreeCharts(t *testing.T) {
	p := parsePage(t, writeLoad(t, readTestdata(t, "step6.json")))
	p.mustName(t, "strategy", oneRun...)
	p.mustName(t, "chart", "p99 lock wait", "Accepted spends per second, the locks", "without a lock (own scale)", "none (BROKEN)")
	if p.svgs != 3 {
		t.Errorf("%d charts, want 3: the p99 lock wait, the locks' rate, the rate without a lock", p.svgs)
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
		t.Errorf("%d charts, want 4: p99 wait against contention, the locks' rate, the rate without a lock, efficiency against contention", p.svgs)
	}
}

// The chart that teaches comes first; none, the control, is grey and
// named BROKEN, on a chart apart from the locks with atomic, so that
// neither flattens the locks' bars.
func TestLoadCharts_leadWithTheWaitAndSetTheControlApart(t *testing.T) {
	for _, c := range []struct{ file, first string }{
		{"step6-sweep.json", "p99 lock wait against contention"},
		{"step6.json", "p99 lock wait"},
	} {
		l, err := decodeLoad(readTestdata(t, c.file))
		if err != nil {
			t.Fatal(err)
		}
		charts, err := loadCharts(l)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(charts[0]), c.first) {
			t.Errorf("%s: the first chart is not %q", c.file, c.first)
		}
		for _, ch := range charts {
			text := svgText(string(ch))
			if _, ok := text["Accepted spends per second, the locks"]; ok {
				for _, s := range []string{"none", "atomic", controlLabel} {
					if _, bad := text[s]; bad {
						t.Errorf("%s: the locks' rate chart has a bar for %s", c.file, s)
					}
				}
			}
			if _, ok := text[controlLabel]; ok && !strings.Contains(string(ch), "rgb(150,150,150)") && !strings.Contains(string(ch), "#969696") {
				t.Errorf("%s: the control's bar is not grey", c.file)
			}
		}
	}
}

func TestCeiling_oneLineWhereItApplies(t *testing.T) {
	c := func(v float64, na string) loadRow { return loadRow{Strategy: "lock", Ceiling: v, CeilingNA: na} }
	for _, tt := range []struct {
		name string
		rows []loadRow
		want float64
	}{
		{"ceilings within 10% give the highest", []loadRow{c(14147, ""), c(14585, "")}, 14585},
		{"ceilings far apart give none", []loadRow{c(453, ""), c(14585, "")}, math.NaN()},
		{"a row without a ceiling gives none", []loadRow{c(14147, ""), c(0, "pool")}, math.NaN()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ceiling(load{Rows: tt.rows}, []string{"lock"})
			if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("ceiling = %v, want %v", got, tt.want)
			}
		})
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
	err := WriteLoad(&b, []byte("accepted=10 OK"), "")
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

// SaveLoad writes the page, with the line the text report gives when
// the pool was the limit, or an error that names the file.
func TestSaveLoad_writesTheFileOrNamesIt(t *testing.T) {
	report := readTestdata(t, "step6.json")
	pool := "The pool, not the lock, is the limit: lock spent 91% of its time waiting for one of the 256 Redis connections.\n"
	path := filepath.Join(t.TempDir(), "report.html")
	if err := SaveLoad(path, report, pool); err != nil {
		t.Fatalf("SaveLoad: %v", err)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := parsePage(t, html)
	p.mustName(t, "strategy", oneRun...)
	if !strings.Contains(p.text, "The pool, not the lock, is the limit: lock spent 91%") {
		t.Errorf("the page does not give the pool's line %q", pool)
	}

	bad := filepath.Join(t.TempDir(), "no-such-dir", "report.html")
	if err := SaveLoad(bad, report, ""); err == nil || !strings.Contains(err.Error(), bad) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("SaveLoad into a missing directory = %v, want an error naming %s", err, bad)
	}
}

func TestFormatMS_threeDigits(t *testing.T) {
	tests := []struct {
		ms   float64
		want string
	}{
		{0.113, "0.113ms"},
		{1, "1.00ms"},
		{4.567, "4.57ms"},
		{78.94, "78.9ms"},
		{1234, "1.23s"},
	}
	for _, tt := range tests {
		if got := FormatMS(tt.ms); got != tt.want {
			t.Errorf("FormatMS(%v) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// The report's first line says where the spends go; with -hot it says
// that every other wallet is idle, not merely that one is spent from.
func TestSpread(t *testing.T) {
	tests := []struct {
		wallets int
		hot     bool
		want    string
	}{
		{16, false, "from 16 wallets"},
		{1, false, "from 1 wallet"},
		{16, true, "from one wallet (-hot: the other 15 of the 16 stay idle)"},
		{1, true, "from one wallet (-hot)"},
	}
	for _, tt := range tests {
		if got := Spread(tt.wallets, tt.hot); got != tt.want {
			t.Errorf("Spread(%d, %v) = %q, want %q", tt.wallets, tt.hot, got, tt.want)
		}
	}
}

// room is three machines that ran the whole lesson; the third's step 3
// phase 1 gave OK where the lesson says BROKEN, and it did not run step 6.
// Step 6 is the root's, run as the workshop runs it.
func room(t *testing.T) []Machine {
	t.Helper()
	load := readTestdata(t, "step6-root.json")
	var room []Machine
	for i, host := range []string{"ana-laptop", "bob-desktop", "room-pc-3"} {
		m := Machine{Label: host, File: "workshop-" + host + ".json", Go: "go1.26.8", OS: "linux/amd64", CPUs: 2 + 2*i,
			Redis: "7.0.15", Postgres: "15.18", Started: "2026-11-30 14:28 UTC", Load: load, Lesson: lesson.Revision,
			LoadArgs: []string{"-workers", "16", "-wallets", "4", "-work", "1ms", "-duration", "1s"}}
		for _, p := range lesson.Phases {
			check := "accepted=10 balance=0 expected=0 " + p.Want
			m.Phases = append(m.Phases, lesson.NewResult(p.Step, p.Phase, check, p.Want == lesson.OK))
		}
		room = append(room, m)
	}
	room[2].Phases[2].Verdict = lesson.OK
	room[2].Phases = room[2].Phases[:len(room[2].Phases)-len(rootStep6)]
	room[2].Failures = []string{"step6-loadtest: exit status 1"}
	room[2].Load = nil
	return room
}

// rootStep6 are the root's step 6's strategies, as step6-root.json has them.
var rootStep6 = []string{"none", "lock", "redislock", "fenced", "version", "atomic", "forupdate"}

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
	p.mustName(t, "strategy", rootStep6...)
	p.mustName(t, "version", "go1.26.8", "7.0.15", "15.18")
	p.mustName(t, "load", "16 workers spending from 4 wallets, 1ms of work, 1s per strategy, in the article's step 6.")
	for _, ph := range lesson.Phases {
		p.mustName(t, "phase", ph.Step+" "+ph.Phase)
	}
	if p.svgs != 3 {
		t.Errorf("%d charts, want 3: p99 wait, the locks' rate, the rate without a lock (the root's step 6 has no ceiling)", p.svgs)
	}
	if strings.Contains(p.text, "serial ceiling") || strings.Contains(p.text, "no longer in the lesson") {
		t.Error("the page speaks of a ceiling or of former phases that no machine has")
	}
	// The cells that differ: step3-ttl 1 on room-pc-3, its seven step 6
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
	if n := strings.Count(strings.Join(cells, "|"), "✗"); n != 8 {
		t.Errorf("%d phase cells marked ✗, want 8 (one verdict and seven unreported)", n)
	}
}

// An old machine (the lesson's first revision, whose step 6 was the lab's
// deep load test with fair, redsync and redlock, and whose step 5 had
// four phases) beside a new one: the page shows both step 6 reports side
// by side under their different loads, step 5's old phase 4 as today's
// phase 3, and the phases the lesson no longer has in rows of their own,
// with the old machine's verdicts.
func TestWriteRoom_anOldMachineBesideANewOne(t *testing.T) {
	now := room(t)[0]
	old := Machine{Label: "old", File: "workshop-old.json", Go: "go1.26.8", OS: "linux/amd64", CPUs: 2,
		Redis: "7.0.15", Postgres: "15.18", Load: readTestdata(t, "step6.json")}
	for _, p := range []struct{ step, phase, verdict string }{
		{"step1-race", "race", "BROKEN"}, {"step2-lock", "lock", "OK"},
		{"step5-fencing", "1", "BROKEN"}, {"step5-fencing", "2", "OK"}, {"step5-fencing", "3", "OK"}, {"step5-fencing", "4", "OK"},
		{"step6-loadtest", "none", "BROKEN"}, {"step6-loadtest", "lock", "OK"}, {"step6-loadtest", "fair", "BROKEN"},
	} {
		old.Phases = append(old.Phases, lesson.Result{Step: p.step, Phase: p.phase, Check: "accepted=1 " + p.verdict, Verdict: p.verdict, Want: "OK"})
	}
	old.Phases[0].Want, old.Phases[2].Want, old.Phases[6].Want = "BROKEN", "BROKEN", "BROKEN"
	r, err := Judge([]Machine{old, now})
	if err != nil {
		t.Fatal(err)
	}
	row := func(step, phase string, former bool) PhaseRow {
		t.Helper()
		i := slices.IndexFunc(r.Phases, func(p PhaseRow) bool { return p.Step == step && p.Phase == phase && p.Former == former })
		if i < 0 {
			t.Fatalf("no row %s %s (former %v)", step, phase, former)
		}
		return r.Phases[i]
	}
	if c := row("step5-fencing", "3", false).Cells[0]; c.Status != Match || c.Checks != "accepted=1 OK" {
		t.Errorf("step5-fencing 3 on old = %+v, want its old phase 4, the version column", c)
	}
	fifty := row("step5-fencing", "3", true)
	if fifty.What != "50 fenced spenders, some stalling past the TTL" || fifty.Cells[0].Status != Former || fifty.Cells[1].Status != Absent {
		t.Errorf("the old phase 3 = %+v, want a row apart, shown on old, not in the new run", fifty)
	}
	if c := row("step6-loadtest", "fair", true).Cells[0]; c.Status != Former || c.Text != "BROKEN, the lesson then said OK" || c.Class() != "unchecked" {
		t.Errorf("fair on old = %+v, want its old verdict, what the lesson then said, unchecked", c)
	}
	if got, want := r.Tallies[0].String(), "7 of 18 phases as the lesson says, 11 not reported, 2 no longer in the lesson"; got != want {
		t.Errorf("old's tally = %q, want %q", got, want)
	}
	if c := row("step5-fencing", "1b", false).Cells[0]; c.Status != Absent || c.Text != "not in the version it ran" {
		t.Errorf("step5-fencing 1b on old = %+v, want grey: the lesson's first revision had no phase 1b", c)
	}
	if r.Phases[len(r.Phases)-1].Former != true || r.SameLoad() {
		t.Error("the former rows do not come last, or two loads that differ are called the same")
	}
	var b bytes.Buffer
	if err := WriteRoom(&b, r); err != nil {
		t.Fatal(err)
	}
	p := parsePage(t, b.Bytes())
	p.mustName(t, "note", "no longer in the lesson; it was: 50 fenced spenders", "an earlier version of the tutorial",
		"64 workers spending from 16 wallets", "16 workers spending from 4 wallets", "different loads", "beyond its own work")
	p.mustName(t, "cell", "BROKEN, the lesson then said OK", "OK, as the lesson then said")
	if p.svgs != 4 {
		t.Errorf("%d charts, want 4: the p99 wait, the locks' rate, the rate without a lock, the old machine's share of its ceiling", p.svgs)
	}
}

func TestThousands(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1230: "1,230", 200520: "200,520", 1234567: "1,234,567", -1230: "-1,230"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

// svgText maps each text of a chart to the x it starts at (the last, for
// a text drawn twice).
func svgText(chart string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range regexp.MustCompile(`<text x="([-\d.]+)"[^>]*>([^<]*)</text>`).FindAllStringSubmatch(chart, -1) {
		x, _ := strconv.ParseFloat(m[1], 64)
		out[m[2]] = x
	}
	return out
}

// Every legend stands right of the data, so that it covers no point: the
// sweep's legend once sat on the 2-worker points of the efficiency chart.
func TestCharts_legendsStandRightOfTheData(t *testing.T) {
	l, err := decodeLoad(readTestdata(t, "step6-sweep.json"))
	if err != nil {
		t.Fatal(err)
	}
	charts, err := loadCharts(l)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct{ lastTick, firstEntry string }{
		{"50", "lock"}, {"forupdate", "2 workers"}, {"atomic", "2 workers"}, {"50", "lock"},
	} {
		text := svgText(string(charts[i]))
		tick, tok := text[c.lastTick]
		entry, eok := text[c.firstEntry]
		if !tok || !eok {
			t.Errorf("chart %d: no %q or %q text", i, c.lastTick, c.firstEntry)
			continue
		}
		if entry < tick+20 {
			t.Errorf("chart %d: legend entry %q starts at x=%.0f, the last tick %q at x=%.0f: the legend is over the data", i, c.firstEntry, entry, c.lastTick, tick)
		}
	}
}

// A run without none has no rate to hold the others against: vs none is
// n/a, as the terminal's table says, never 0%.
func TestWriteLoad_vsNoneWithoutNoneIsNA(t *testing.T) {
	var rep map[string]any
	if err := json.Unmarshal(readTestdata(t, "step6.json"), &rep); err != nil {
		t.Fatal(err)
	}
	rows := rep["strategies"].([]any)[1:] // none left out
	for _, r := range rows {
		r.(map[string]any)["vs_none"] = 0
	}
	rep["strategies"] = rows
	data, _ := json.Marshal(rep)
	html := string(writeLoad(t, data))
	last := regexp.MustCompile(`<td class="num">([^<]*)</td><td>`).FindAllStringSubmatch(html, -1) // vs none, before the verdict
	if len(last) != len(rows) {
		t.Fatalf("%d rows with vs none, want %d", len(last), len(rows))
	}
	for _, m := range last {
		if m[1] != "n/a" {
			t.Errorf("vs none without none = %q, want n/a", m[1])
		}
	}
}

func TestJudge_everyStatus(t *testing.T) {
	full := func(label string) Machine {
		m := Machine{Label: label, File: "workshop-" + label + ".json", Lesson: lesson.Revision}
		for _, p := range lesson.Phases {
			m.Phases = append(m.Phases, lesson.NewResult(p.Step, p.Phase, "check "+p.Want, p.Want == lesson.OK))
		}
		return m
	}
	drop := func(m Machine, step, phase string) Machine {
		m.Phases = slices.DeleteFunc(slices.Clone(m.Phases), func(r lesson.Result) bool { return r.Step == step && r.Phase == phase })
		return m
	}
	all := full("all")
	left := drop(full("left"), "step6-loadtest", "fenced")
	left.LeftOut = map[string]string{"step6-loadtest/fenced": "fenced: PostgreSQL down"}
	missing := drop(full("missing"), "step5-fencing", "1b")
	other := full("other")
	other.Phases[2].Verdict = lesson.OK // step3-ttl 1
	stopped := drop(full("stopped"), "step6-loadtest", "forupdate")
	stopped.Interrupted = "step6-loadtest"
	drilled := full("drilled")
	drilled.Phases = append(drilled.Phases, lesson.NewResult(lesson.DrillStep, "pause/lock", "check BROKEN", false))

	r, err := Judge([]Machine{all, left, missing, other, stopped, drilled})
	if err != nil {
		t.Fatal(err)
	}
	n := len(lesson.Phases)
	for i, want := range []struct {
		tally   string
		differs bool
	}{
		{fmt.Sprintf("%d of %d phases as the lesson says", n, n), false},
		{fmt.Sprintf("%d of %d phases as the lesson says, 1 left out, not checked", n-1, n-1), false},
		{fmt.Sprintf("%d of %d phases as the lesson says, 1 not reported", n-1, n), true},
		{fmt.Sprintf("%d of %d phases as the lesson says", n-1, n), true},
		{fmt.Sprintf("%d of %d phases as the lesson says, 2 not run", n-1, n+1), true}, // forupdate, the drill's cell
		{fmt.Sprintf("%d of %d phases as the lesson says", n+1, n+1), false},
	} {
		if got := r.Tallies[i].String(); got != want.tally || r.Differs(i) != want.differs {
			t.Errorf("%s: %q, differs %v; want %q, %v", r.Machines[i].Label, got, r.Differs(i), want.tally, want.differs)
		}
	}
	// The drill's cell is a row; the machines without it did not run it,
	// which is no difference (the lesson does not promise it), but for
	// the one interrupted before it.
	last := r.Phases[len(r.Phases)-1]
	for i, want := range []Status{Absent, Absent, Absent, Absent, NotRun, Match} {
		if last.Step != lesson.DrillStep || last.Cells[i].Status != want {
			t.Errorf("drill row on %s = %+v, want status %d", r.Machines[i].Label, last.Cells[i], want)
		}
	}
	if c := r.Phases[slices.IndexFunc(r.Phases, func(p PhaseRow) bool { return p.Phase == "fenced" })].Cells[1]; c.Status != LeftOut || c.Checks != "fenced: PostgreSQL down" || c.Class() != "unchecked" || c.Mark() != "" {
		t.Errorf("fenced on left = %+v, want left out with why, not checked", c)
	}
}
