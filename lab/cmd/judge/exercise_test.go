//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// clone is a clone of the repository (its last commit) in a temporary
// folder: the exercises change its lock/, never the repository's.
func clone(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	if out, err := exec.Command("git", "clone", "--quiet", repo(t), dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	return dir
}

// git runs git in dir and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// make exercise with no STEP= (or one with no exercise) asks for the
// step in one line, exit 2: it judges nothing, and changes nothing.
func TestExercise_asksForTheStep(t *testing.T) {
	root := repo(t)
	dir := mirror(t, root) // its lock/ is the repository's: only refusals run here
	for _, step := range []string{"", "4", "two"} {
		t.Run("STEP="+step, func(t *testing.T) {
			tmp := t.TempDir()
			r := runJudge(t, dir, tmp, "-root", ".", "-exercise", step)
			if r.code != 2 || r.stdout != "" {
				t.Errorf("judge -exercise %q = %d, stdout %q; want 2 and nothing", step, r.code, r.stdout)
			}
			oneLine(t, "stderr", r.stderr, "STEP=2, 3 or 5, e.g. make exercise STEP=2")
			args := []string{"exercise"}
			if step != "" {
				args = append(args, "STEP="+step)
			}
			m := runMake(t, dir, tmp, args...)
			said, makes := judgeSaid(m.stderr)
			oneLine(t, "the judge's stderr", said, "STEP=2, 3 or 5")
			if m.code != 2 || !strings.HasSuffix(makes, "Error 2\n") || m.stdout != "" || len(m.made) > 0 {
				t.Errorf("make %q = %d, make said %q, stdout %q, made %q; want the judge's exit 2, and nothing done", args, m.code, makes, m.stdout, m.made)
			}
		})
	}
	if st := git(t, root, "status", "--porcelain", "--", "lock"); st != "" {
		t.Errorf("lock/ changed:\n%s", st)
	}
}

// Each exercise's stubs leave the linters nothing to report (make lint
// runs them; a stub's script left unused was U1000 to staticcheck, and
// stopped make test before any test).
func TestExercise_stubsPassTheLinters(t *testing.T) {
	root := repo(t)
	dir := clone(t)
	staticcheck := filepath.Join(t.TempDir(), "staticcheck")
	build := exec.Command("go", "build", "-o", staticcheck, "honnef.co/go/tools/cmd/staticcheck")
	build.Dir = filepath.Join(root, "lab")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build staticcheck: %v\n%s", err, out)
	}
	for _, step := range []string{"2", "3", "5"} {
		t.Run("step "+step, func(t *testing.T) {
			git(t, dir, "restore", "lock")
			if _, err := exercise(t.Context(), dir, step); err != nil {
				t.Fatal(err)
			}
			if git(t, dir, "status", "--porcelain", "--", "lock") == "" {
				t.Fatal("the exercise changed nothing in lock/")
			}
			for _, lint := range [][]string{
				{"gofmt", "-l", "lock"},
				{"go", "vet", "./lock/"},
				{staticcheck, "./lock/"},
			} {
				cmd := exec.Command(lint[0], lint[1:]...)
				cmd.Dir = dir
				if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
					t.Errorf("%s after make exercise STEP=%s: %v\n%s", strings.Join(lint, " "), step, err, out)
				}
			}
		})
	}
}

// A compile error of the learner's own elsewhere in the root module (a
// ./mylock, as docs/judge.md suggests) is named as such, before any stub:
// lock/ stays as it was, and a rerun after the fix works.
func TestExercise_namesACompileErrorOfTheLearnersOwn(t *testing.T) {
	dir := clone(t)
	if err := os.Mkdir(filepath.Join(dir, "mylock"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "mylock", "lock.go"), []byte("package mylock\n\nfunc Fence() int64 { return \"one\" }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := exercise(t.Context(), dir, "2")
	if err == nil {
		t.Fatal("the exercise went on with a root module that does not build")
	}
	msg := err.Error()
	for _, want := range []string{"the root module does not build, before any stub", "mylock/lock.go:3:", "lock/ is unchanged"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error = %q, want it to contain %q", msg, want)
		}
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("error = %q, want one line", msg)
	}
	if st := git(t, dir, "status", "--porcelain", "--", "lock"); st != "" {
		t.Errorf("lock/ changed:\n%s", st)
	}
	os.RemoveAll(filepath.Join(dir, "mylock"))
	if _, err := exercise(t.Context(), dir, "2"); err != nil {
		t.Errorf("after the fix: %v", err)
	}
}
