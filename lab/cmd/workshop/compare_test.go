package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/workshop"
)

// The testdata files are real runs of make workshop JSON=1. Four are of
// the lesson's first revision, when the steps lived in the lab: three of
// an older version still, which had fewer phases (one written before the
// host label and the format existed, lab-b, and "lab c"), and "lab d",
// run with the Redlock nodes down, so that step 6 left redlock out. "lab
// e" is of today's: the root's steps and the drill.
var room = []string{"testdata/workshop-before-host.json", "testdata/workshop-lab-b.json", "testdata/workshop-lab-c.json"}

const (
	labD = "testdata/workshop-lab-d.json"
	labE = "testdata/workshop-lab-e.json"
)

func compareRun(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(t.Context(), append([]string{"-compare"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCompare_threeMachinesSideBySide(t *testing.T) {
	page := filepath.Join(t.TempDir(), "room.html")
	code, out, errs := compareRun(t, append([]string{"-html", page}, room...)...)
	if code != 0 || errs != "" {
		t.Fatalf("compare = %d, stderr %q; want 0 and nothing", code, errs)
	}
	for _, want := range []string{"3 machines:", "before-host ", "lab-b ", "lab c ", "17 of 18 phases as the lesson says, 1 not reported, 1 no longer in the lesson",
		"3 of 3 machines differ from the lesson:", "lab c: step6-loadtest phase atomic: not reported (the lesson says OK)",
		"1 phase is no longer in the lesson, from files of an earlier version (shown, not judged):",
		"step5-fencing phase 3 (50 fenced spenders, some stalling past the TTL): before-host OK, as the lesson then said; lab-b OK, as the lesson then said; lab c OK", "wrote " + page} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">before-host<", ">lab-b<", ">lab c<", "workshop-lab-c.json", "Step 6 across the machines", "<svg", "not in the version it ran"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("page does not contain %q", want)
		}
	}
}

// Without -html, -compare prints the summary alone.
func TestCompare_summaryAloneWithoutHTML(t *testing.T) {
	code, out, errs := compareRun(t, room[1])
	if code != 0 || errs != "" || !strings.Contains(out, "1 machine:") || strings.Contains(out, "wrote") {
		t.Errorf("compare = %d, stdout %q, stderr %q; want 0, the summary and no page", code, out, errs)
	}
}

// One machine run twice gives two files with one host label: both are
// shown, each named by its file.
func TestCompare_sameMachineTwice(t *testing.T) {
	again := filepath.Join(t.TempDir(), "workshop-lab-b-again.json")
	copyFile(t, room[1], again, nil)
	code, out, _ := compareRun(t, room[1], again)
	if code != 0 || !strings.Contains(out, "lab-b (workshop-lab-b.json)") || !strings.Contains(out, "lab-b (workshop-lab-b-again.json)") {
		t.Errorf("compare = %d, summary:\n%s\nwant both files, named by file", code, out)
	}
	code, out, _ = compareRun(t, room[1], room[1])
	if code != 0 || !strings.Contains(out, "#1") || !strings.Contains(out, "#2") {
		t.Errorf("compare of one file twice = %d, summary:\n%s\nwant both, numbered", code, out)
	}
}

// A phase that gave another verdict is named in the summary.
func TestCompare_summaryNamesAPhaseThatDiffers(t *testing.T) {
	odd := filepath.Join(t.TempDir(), "workshop-odd.json")
	copyFile(t, room[1], odd, func(rep map[string]any) {
		rep["host"] = "odd"
		phase := rep["phases"].([]any)[4].(map[string]any) // step3-ttl 1
		phase["verdict"], phase["match"] = "OK", false
	})
	code, out, _ := compareRun(t, room[2], odd)
	if code != 0 || !strings.Contains(out, "16 of 18") || !strings.Contains(out, "odd: step3-ttl phase 1 gave OK, the lesson says BROKEN") {
		t.Errorf("compare = %d, summary:\n%s\nwant odd's step3-ttl 1 named", code, out)
	}
}

func TestCompare_refusesAFileItCannotRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	newer := filepath.Join(dir, "newer.json")
	copyFile(t, room[1], newer, func(rep map[string]any) { rep["format"] = workshop.FormatVersion + 1 })
	tests := []struct {
		name, file, want string
	}{
		{"step 6's JSON", write("step6.json", `{"step": "step6-loadtest", "phases": [], "strategies": []}`), "not a workshop JSON file"},
		{"a JSON array", write("list.json", `[1, 2]`), "not a workshop JSON file"},
		{"not JSON", write("notes.txt", "lab-b: all OK\n"), "not JSON"},
		{"a newer format", newer, "is newer than this workshop reads"},
		{"a missing file", filepath.Join(dir, "nope.json"), "no such file"},
		{"step 6's strategies not a list", edited(t, dir, "bad-rows.json", func(s6 map[string]any) { s6["strategies"] = "lock" }), "step 6: "},
		{"step 6's workers not a count", edited(t, dir, "bad-workers.json", func(s6 map[string]any) { s6["params"].(map[string]any)["workers"] = "many" }), "params.workers"},
		{"a step 6 row without a strategy", edited(t, dir, "no-strategy.json", func(s6 map[string]any) { delete(s6["strategies"].([]any)[0].(map[string]any), "strategy") }), "names no strategy"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := filepath.Join(dir, "room.html")
			code, out, errs := compareRun(t, "-html", page, room[1], tt.file)
			if code != 1 || strings.Count(errs, "\n") != 1 || !strings.HasPrefix(errs, "workshop: read "+tt.file+": ") || !strings.Contains(errs, tt.want) {
				t.Errorf("compare = %d, stderr %q; want 1 and one line naming %s, saying %q", code, errs, tt.file, tt.want)
			}
			if out != "" {
				t.Errorf("stdout = %q, want nothing", out)
			}
			if _, err := os.Stat(page); err == nil {
				t.Error("the page was written all the same")
			}
		})
	}
}

// The summary and the page show one judgement: every phase the text
// names as differing is a red cell on the page, and every machine's count
// is the same in both.
func TestCompare_summaryAndPageAgree(t *testing.T) {
	odd := filepath.Join(t.TempDir(), "workshop-odd.json")
	copyFile(t, labD, odd, func(rep map[string]any) {
		rep["host"] = "odd"
		phase := rep["phases"].([]any)[4].(map[string]any) // step3-ttl 1
		phase["verdict"] = "OK"
	})
	page := filepath.Join(t.TempDir(), "room.html")
	code, out, _ := compareRun(t, append([]string{"-html", page}, append(room, labD, odd)...)...)
	if code != 0 {
		t.Fatalf("compare = %d, summary:\n%s", code, out)
	}
	html := readPage(t, page)
	named := strings.Count(out, ": not reported (the lesson says") + strings.Count(out, ", the lesson says ")
	if red := strings.Count(html, "✗ differs"); red != named || named != 3+1 {
		t.Errorf("the summary names %d phases that differ, the page marks %d; want 4 in both (step 6's atomic per older file, odd's step3-ttl 1; step 5's 1b is not in the version those files ran)\n%s", named, red, out)
	}
	for _, tally := range []string{"17 of 18 phases as the lesson says, 1 not reported, 1 no longer in the lesson",
		"23 of 23 phases as the lesson says, 1 left out, not checked, 3 no longer in the lesson", "22 of 23 phases as the lesson says, 1 left out, not checked, 3 no longer in the lesson"} {
		if !strings.Contains(out, tally) || !strings.Contains(html, tally) {
			t.Errorf("the summary or the page does not say %q", tally)
		}
	}
}

// A phase a step left out (redlock, its nodes down, in step 6 of the
// lesson's first revision) is neither a difference nor a pass: both the
// summary and the page say it was left out, not checked, and why.
func TestCompare_aPhaseLeftOutIsShownAsLeftOut(t *testing.T) {
	page := filepath.Join(t.TempDir(), "room.html")
	code, out, _ := compareRun(t, "-html", page, labD)
	for _, want := range []string{"23 of 23 phases as the lesson says, 1 left out, not checked, 3 no longer in the lesson",
		"No machine differs from the lesson, but 1 phase was left out, not checked:",
		"lab d: step6-loadtest phase redlock (no longer in the lesson): left out, not checked: redlock: nodes down"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	if code != 0 || strings.Contains(out, "Every machine gave every verdict") {
		t.Errorf("compare = %d, summary:\n%s\nwant 0 and no claim that every verdict was given", code, out)
	}
	html := readPage(t, page)
	if strings.Contains(html, `class="differs"`) || strings.Contains(html, `class="row-differs"`) || strings.Contains(html, "✗") {
		t.Error("the page marks something as differing; want only redlock shown as left out")
	}
	if !strings.Contains(html, `<td class="unchecked">left out, not checked<small>redlock: nodes down`) {
		t.Error("the page does not show redlock as left out, not checked, with why")
	}
}

// A 64-worker run and a 2,8,50 sweep are not the same load: the summary
// and the page say how each machine ran step 6, the page marks the odd one.
func TestCompare_saysWhenStep6RanUnderDifferentLoads(t *testing.T) {
	sweep := filepath.Join(t.TempDir(), "workshop-sweep.json")
	copyFile(t, labD, sweep, func(rep map[string]any) {
		rep["host"] = "sweep"
		s6 := rep["steps"].(map[string]any)["step6-loadtest"].(map[string]any)
		for i, row := range s6["strategies"].([]any) {
			row.(map[string]any)["workers"] = []float64{2, 8, 50}[i%3]
		}
	})
	page := filepath.Join(t.TempDir(), "room.html")
	code, out, _ := compareRun(t, "-html", page, labD, labD, sweep)
	if code != 0 || !strings.Contains(out, "Step 6 ran under different loads, so its rates do not compare:") ||
		!strings.Contains(out, "2, 8, 50 workers spending from 16 wallets") || !strings.Contains(out, "64 workers spending from 16 wallets, 1ms of work, 2s per strategy") {
		t.Errorf("compare = %d, summary:\n%s\nwant each machine's load named", code, out)
	}
	html := readPage(t, page)
	if !strings.Contains(html, "ran step 6 under different loads") || strings.Count(html, `<td class="unlike">`) != 1 || !strings.Contains(html, `<td class="unlike">2, 8, 50 workers`) {
		t.Error("the page does not mark the sweep's load as unlike the others'")
	}
	code, out, _ = compareRun(t, "-html", page, labD, labD)
	if code != 0 || strings.Contains(out, "different loads") || !strings.Contains(readPage(t, page), "Every machine ran step 6 under the same load: 64 workers") {
		t.Errorf("compare of one load twice = %d, summary:\n%s\nwant the same load said once, on the page", code, out)
	}
}

// Nothing read from a file reaches the terminal with a control character:
// a label that sets the terminal's title, one that forges a verdict line,
// a phase name, a failure and a step 6 strategy with ESC, CR or BEL.
func TestCompare_printsNoControlCharacterFromAFile(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i, host := range []string{"lab\x1b]0;owned\a", "lab\nEvery machine gave every verdict the lesson promises.", "lab\rok", "bell\a"} {
		file := filepath.Join(dir, fmt.Sprintf("workshop-%d.json", i))
		copyFile(t, labD, file, func(rep map[string]any) {
			rep["host"] = host
			rep["failures"] = []string{"step2-lock: \x1b[31mred\x1b[0m"}
			phase := rep["phases"].([]any)[4].(map[string]any)
			phase["phase"], phase["verdict"] = "1\x1b[2J", "OK"
			s6 := rep["steps"].(map[string]any)["step6-loadtest"].(map[string]any)
			s6["strategies"].([]any)[0].(map[string]any)["strategy"] = "none\x1b]0;x\a"
			s6["left_out"] = map[string]any{"redlock": "nodes\r\ndown\a"}
		})
		files = append(files, file)
	}
	page := filepath.Join(dir, "room.html")
	code, out, errs := compareRun(t, append([]string{"-html", page}, files...)...)
	if code != 0 {
		t.Fatalf("compare = %d, stderr %q", code, errs)
	}
	for _, text := range []string{out, readPage(t, page)} {
		if i := strings.IndexAny(text, "\x1b\r\a"); i >= 0 {
			t.Errorf("control character %q printed: %q", text[i], text[max(0, i-40):min(len(text), i+40)])
		}
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' || r == 0x7f }); i >= 0 {
		t.Errorf("control character %q in the summary", out[i])
	}
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, "Every machine gave") {
			t.Errorf("a host label forged the line %q:\n%s", l, out)
		}
	}
	for _, want := range []string{`"lab\x1b]0;owned\a"`, `"lab\nEvery machine gave every verdict the lesson promises."`, `"step2-lock: \x1b[31mred\x1b[0m"`, `"1\x1b[2J"`, `"nodes\r\ndown\a"`} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not show %s quoted:\n%s", want, out)
		}
	}
}

// -html in a folder that does not exist is a bad flag: refused in one
// line before any file is read.
func TestCompare_refusesAPageInAMissingFolder(t *testing.T) {
	page := filepath.Join(t.TempDir(), "missing", "room.html")
	code, out, errs := compareRun(t, "-html", page, "no-such-file.json")
	if code != 2 || out != "" || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "does not exist") || !strings.Contains(errs, page) {
		t.Errorf("compare = %d, stdout %q, stderr %q; want 2, nothing, and one line naming the missing folder", code, out, errs)
	}
}

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edited is a copy of lab d in dir whose step 6 report edit changed.
func edited(t *testing.T, dir, name string, edit func(step6 map[string]any)) string {
	t.Helper()
	path := filepath.Join(dir, name)
	copyFile(t, labD, path, func(rep map[string]any) { edit(rep["steps"].(map[string]any)["step6-loadtest"].(map[string]any)) })
	return path
}

// copyFile copies a workshop JSON file, changed by edit if not nil.
func copyFile(t *testing.T, from, to string, edit func(map[string]any)) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var rep map[string]any
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		edit(rep)
		if data, err = json.Marshal(rep); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(to, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// An old file (the lesson's first revision: the steps in the lab, step 6
// the deep load test) beside a new one (the root's steps): both are read
// and judged, step 6 is charted across them under loads the page says
// differ, and the phases the lesson no longer has are shown apart.
func TestCompare_anOldFileBesideANewOne(t *testing.T) {
	page := filepath.Join(t.TempDir(), "room.html")
	code, out, errs := compareRun(t, "-html", page, labD, labE)
	if code != 0 || errs != "" {
		t.Fatalf("compare = %d, stderr %q; want 0 and nothing", code, errs)
	}
	// lab d reports every phase of today's lesson: step 5's version column,
	// its phase 4 then, is today's phase 3.
	for _, want := range []string{"2 machines:",
		"lab d  go1.26.8 linux/amd64, 2 CPUs, Redis 7.0.15, PostgreSQL 15.18  23 of 23 phases as the lesson says, 1 left out, not checked, 3 no longer in the lesson",
		"lab e  go1.26.8 linux/amd64, 2 CPUs, Redis 7.0.15, PostgreSQL 15.18  23 of 23 phases as the lesson says",
		"3 phases are no longer in the lesson", "step6-loadtest phase fair (the fair lock: waiters queue and a release hands off, under load): lab d OK, as the lesson then said",
		"Step 6 ran under different loads, so its rates do not compare:",
		"lab d  64 workers spending from 16 wallets, 1ms of work, 2s per strategy.",
		"lab e  16 workers spending from 4 wallets, 1ms of work, 1s per strategy, in the article's step 6."} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	html := readPage(t, page)
	for _, want := range []string{"Step 6 across the machines", "ran step 6 under different loads", "Step 6: p99 wait", "Step 6: accepted spends per second, the locks",
		"no longer in the lesson; it was: 50 fenced spenders", "OK, as the lesson then said", "beyond its own work"} {
		if !strings.Contains(html, want) {
			t.Errorf("page does not contain %q", want)
		}
	}
	if n := strings.Count(html, "<svg"); n != 4 {
		t.Errorf("%d charts, want 4: the wait, the locks' rate, the rate without a lock, and lab d's share of its ceiling", n)
	}

	// Two new files: one load, said once, and every rate beside the other.
	code, out, _ = compareRun(t, "-html", page, labE, labE)
	if code != 0 || strings.Contains(out, "different loads") || strings.Contains(out, "no longer in the lesson") ||
		!strings.Contains(readPage(t, page), "Every machine ran step 6 under the same load: 16 workers spending from 4 wallets") {
		t.Errorf("compare of two new files = %d, summary:\n%s\nwant one load, on the page, and no former phase", code, out)
	}
}

// The workshop document keeps every key an old file has, outside the
// steps' own outputs (which the steps' move to the root changed once):
// the top level and each phase's row. testdata/json-contract.json is a
// real run of today's.
func TestDoc_keepsTheKeysOfAnOldFile(t *testing.T) {
	strip := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		doc["steps"] = map[string]any{}
		doc["phases"] = doc["phases"].([]any)[:1] // step1-race race, in both
		b, _ := json.Marshal(doc)
		return b
	}
	for _, old := range []string{labD, room[1]} {
		missing, err := labtest.MissingKeys(strip(old), strip("testdata/json-contract.json"))
		if err != nil || len(missing) > 0 {
			t.Errorf("%s: keys today's document lacks: %q (%v)", old, missing, err)
		}
	}
}
