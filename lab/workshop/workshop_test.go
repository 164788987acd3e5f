package workshop

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
)

func TestMissing_namesEveryPhaseNotReported(t *testing.T) {
	var all []harness.PhaseResult
	for _, p := range lesson.Phases {
		all = append(all, harness.PhaseResult{Result: lesson.Result{Step: p.Step, Phase: p.Phase}})
	}
	if got := Missing(all); len(got) != 0 {
		t.Errorf("Missing(every phase) = %q, want nothing", got)
	}
	got := Missing(all[1:])
	first := lesson.Phases[0]
	if len(got) != 1 || !strings.Contains(got[0], first.Step) || !strings.Contains(got[0], first.Phase) {
		t.Errorf("Missing(all but the first) = %q, want one line naming %s phase %s", got, first.Step, first.Phase)
	}
}

func TestPrintTable_marksMismatches(t *testing.T) {
	doc := &Doc{}
	doc.Finish([]harness.PhaseResult{
		{Result: lesson.NewResult("step2-lock", "lock", "accepted=10 balance=0 expected=0 OK", true)},
		{Result: lesson.NewResult("step3-ttl", "2", "accepted=2 balance=90 expected=80 BROKEN", false)},
	})
	var out bytes.Buffer
	doc.PrintTable(&out)
	var ok, bad string
	for l := range strings.SplitSeq(out.String(), "\n") {
		switch {
		case strings.HasPrefix(l, "step2-lock"):
			ok = l
		case strings.HasPrefix(l, "step3-ttl"):
			bad = l
		}
	}
	if !strings.Contains(ok, " yes ") {
		t.Errorf("matching row = %q, want it marked yes", ok)
	}
	if !strings.Contains(bad, " NO ") || !strings.Contains(bad, "BROKEN") {
		t.Errorf("mismatched row = %q, want it marked NO with the actual verdict", bad)
	}
}

// The drill prints one JSON line per run; they become an array, and each
// run a phase of the step "drill" judged by lesson.Drills.
func TestReadPhases_drillLinesBecomePhases(t *testing.T) {
	out, ok := jsonDoc([]byte(`{"nemesis":"pause","strategy":"lock","check":"accepted=3 balance=80 expected=70 BROKEN","ok":false}
{"nemesis":"pause","strategy":"fenced","check":"accepted=3 balance=70 expected=70 OK","ok":true}
`))
	if !ok {
		t.Fatal("two JSON lines are not read as one document")
	}
	phases, err := readPhases(lesson.DrillStep, out)
	if err != nil || len(phases) != 2 || phases[0].Phase != "pause/lock" || !phases[0].Match() || !phases[1].Match() {
		t.Errorf("readPhases = %+v (%v), want pause/lock and pause/fenced, both as the lesson says", phases, err)
	}
	if _, ok := jsonDoc([]byte("not JSON\n")); ok {
		t.Error("jsonDoc read text as JSON")
	}
}

func TestFileSafe(t *testing.T) {
	tests := []struct{ label, want string }{
		{"lab-b", "lab-b"},
		{"lab c", "lab-c"},
		{"Ana's MacBook Pro", "Ana-s-MacBook-Pro"},
		{"../../etc/passwd", "etc-passwd"},
		{"café", "caf"},
		{"***", "host"},
	}
	for _, tt := range tests {
		if got := fileSafe(tt.label); got != tt.want {
			t.Errorf("fileSafe(%q) = %q, want %q", tt.label, got, tt.want)
		}
	}
}

// -save writes workshop-<host>.json in the current directory, the JSON
// -json prints, and says so.
func TestSave_namesTheFileByHost(t *testing.T) {
	t.Chdir(t.TempDir())
	var errb bytes.Buffer
	doc := &Doc{Format: FormatVersion, Host: "lab c", Go: "go1.26.8"}
	if err := doc.Save(&errb); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("workshop-lab-c.json")
	if err != nil {
		t.Fatal(err)
	}
	var got Doc
	if err := json.Unmarshal(data, &got); err != nil || got.Host != "lab c" || got.Format != FormatVersion {
		t.Errorf("saved %s (%v), want the document with host %q and format %d", data, err, "lab c", FormatVersion)
	}
	if msg := errb.String(); !strings.Contains(msg, "wrote workshop-lab-c.json") {
		t.Errorf("stderr = %q, want the file named", msg)
	}
}
