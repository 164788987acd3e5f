package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.com/walletlock/internal/workshop"
)

// The testdata files are three real runs of make workshop JSON=1: one
// written before the host label and the format existed, lab-b, and "lab c".
var room = []string{"testdata/workshop-before-host.json", "testdata/workshop-lab-b.json", "testdata/workshop-lab-c.json"}

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
	for _, want := range []string{"3 machines:", "before-host ", "lab-b ", "lab c ", "20 of 20 verdicts as the lesson says", "wrote " + page} {
		if !strings.Contains(out, want) {
			t.Errorf("summary does not say %q:\n%s", want, out)
		}
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{">before-host<", ">lab-b<", ">lab c<", "workshop-lab-c.json", "Step 6 across the machines", "<svg"} {
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
	if code != 0 || !strings.Contains(out, "19 of 20") || !strings.Contains(out, "odd: step3-ttl phase 1 gave OK, the lesson says BROKEN") {
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
