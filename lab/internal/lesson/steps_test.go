package lesson_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/lesson"
)

// short are the flags that keep a step brief here; the others run as the
// article runs them.
var short = map[string][]string{"step6-loadtest": {"-duration", "300ms"}}

// TestPhases_matchTheRootsSteps builds the root's programs once and runs
// each step with -json: the phases it reports, in order, and the verdict
// each wants, stated inline in its main.go, are lesson.Phases's for that
// step, and each gives the verdict it wants. Every step program at the
// root has phases in the table, and every step of the table is a program
// at the root.
func TestPhases_matchTheRootsSteps(t *testing.T) {
	rdb := testenv.Redis(t)
	testenv.Postgres(t)
	root, _, err := harness.Repo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := harness.Build(t.Context(), root, bin, os.Stderr, "./cmd/..."); err != nil {
		t.Fatal(err)
	}

	var steps []string
	for _, p := range lesson.Phases {
		if !slices.Contains(steps, p.Step) {
			steps = append(steps, p.Step)
		}
	}
	programs, err := filepath.Glob(filepath.Join(root, "cmd", "step*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range programs {
		if !slices.Contains(steps, filepath.Base(dir)) {
			t.Errorf("cmd/%s at the root has no phases in lesson.Phases", filepath.Base(dir))
		}
	}

	for _, step := range steps {
		t.Run(step, func(t *testing.T) {
			args := append([]string{"-json", "-prefix", labtest.Prefix(t, rdb)}, short[step]...)
			cmd := exec.CommandContext(t.Context(), filepath.Join(bin, step), args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Errorf("%s %q: %v; stderr:\n%s", step, args, err, stderr.String())
			}
			var got struct {
				Step   string          `json:"step"`
				Phases []lesson.Result `json:"phases"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &got); err != nil || got.Step != step {
				t.Fatalf("-json printed %q (%v), want one document of step %s", stdout.String(), err, step)
			}
			var want []lesson.Result
			for _, p := range lesson.Phases {
				if p.Step == step {
					want = append(want, lesson.Result{Step: step, Phase: p.Phase, Want: p.Want})
				}
			}
			var asked []lesson.Result
			for _, r := range got.Phases {
				asked = append(asked, lesson.Result{Step: r.Step, Phase: r.Phase, Want: r.Want})
				if !r.Match() {
					t.Errorf("phase %s gave %s, wants %s: %s", r.Phase, r.Verdict, r.Want, r.Check)
				}
			}
			if !slices.Equal(asked, want) {
				t.Errorf("phases and the verdicts they want:\n got %v\nwant %v (lesson.Phases)", asked, want)
			}
		})
	}
}
