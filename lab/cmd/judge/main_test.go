package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/launch"
)

// hangGuard bounds a run of the judge or make, a build among its work,
// on a busy machine: it catches a hang; it is no speed test.
const hangGuard = 5 * time.Minute

// asJudge, set in a test binary's environment, makes it the judge
// program: main, for the tests that run the judge as a process (a Ctrl-C,
// a SIGKILL, make), and for the processes the judge starts from its own
// executable (its holders, its check of the flags).
const asJudge = "WALLETLOCK_JUDGE_TEST_AS_PROGRAM"

func TestMain(m *testing.M) {
	if os.Getenv(asJudge) != "" {
		main()
		return
	}
	os.Exit(m.Run())
}

// repo is the repository's root folder.
func repo(t *testing.T) string {
	t.Helper()
	root, _, err := harness.Repo(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// needsRedisServer skips the test without redis-server on PATH (the judge
// starts its own), or fails it when CI is set.
func needsRedisServer(t *testing.T) {
	t.Helper()
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// judgeRun is one run of the judge program, or of make.
type judgeRun struct {
	stdout, stderr string
	code           int
}

// judgeCmd is the judge program, this test binary started as main, in
// dir, with its temporary folders in tmp (TMPDIR): the folders a test
// looks at are its own.
func judgeCmd(t *testing.T, dir, tmp string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asJudge+"=1", "TMPDIR="+tmp)
	return cmd
}

// runJudge runs the judge program to its end.
func runJudge(t *testing.T, dir, tmp string, args ...string) judgeRun {
	t.Helper()
	return runToEnd(t, judgeCmd(t, dir, tmp, args...))
}

// runToEnd runs cmd to its end (or hangGuard, then kills it).
func runToEnd(t *testing.T, cmd *exec.Cmd) judgeRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(hangGuard, func() { cmd.Process.Kill() })
	defer timer.Stop()
	err := cmd.Wait()
	r := judgeRun{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return r
}

// oneLine requires exactly one line of text that contains each of wants.
func oneLine(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	if strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, "\n") {
		t.Errorf("%s = %q, want one line", what, got)
	}
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s = %q, want it to contain %q", what, got, w)
		}
	}
}

// learner copies the learner's lock (lab/judge/learner, without its test)
// into dir/name, a folder inside the repository's root module, with edit
// applied to its source, and returns the folder.
func learner(t *testing.T, root, dir, name string, edit func(src string) string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "lab", "judge", "learner", "lock.go"))
	if err != nil {
		t.Fatal(err)
	}
	pkg := filepath.Join(dir, name)
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if edit != nil {
		text = edit(text)
	}
	if err := os.WriteFile(filepath.Join(pkg, "lock.go"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return pkg
}

// mirror is a folder that reads as the repository: links to every entry
// of root, but a copy of its Makefile, and .services/bin/judge a link to
// this test binary (run with asJudge set). A test runs make or the judge
// in it, and whatever they write lands in it, never in the repository.
func mirror(t *testing.T, root string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(filepath.Join(dir, ".services", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		switch e.Name() {
		case "Makefile", ".services", ".git":
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(exe, filepath.Join(dir, ".services", "bin", "judge")); err != nil {
		t.Fatal(err)
	}
	return dir
}

// files lists what is in dir, recursively, without following links, as
// paths from dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	var got []string
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != dir {
			rel, _ := filepath.Rel(dir, path)
			got = append(got, rel)
		}
		return nil
	})
	return got
}
