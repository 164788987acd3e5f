//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// makeRun is one run of make in a mirror of the repository.
type makeRun struct {
	judgeRun
	made []string // the files it left in the mirror, or in its folders
}

// runMake runs make with args in dir (a mirror), the judge being this
// test binary, with TMPDIR tmp. `up` and `judge-bin` are taken as done:
// the judge starts its own redis-server, and is already built.
func runMake(t *testing.T, dir, tmp string, args ...string) makeRun {
	t.Helper()
	before := files(t, dir)
	cmd := exec.Command("make", append([]string{"--no-print-directory", "-o", "up", "-o", "judge-bin"}, args...)...)
	cmd.Dir = dir
	// A make of its own, not a sub-make of `make test`'s: none of the
	// outer make's flags or level, which would name it make[1].
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains([]string{"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}, name)
	})
	cmd.Env = append(env, asJudge+"=1", "TMPDIR="+tmp)
	r := makeRun{judgeRun: runToEnd(t, cmd)}
	for _, f := range files(t, dir) {
		if !slices.Contains(before, f) {
			r.made = append(r.made, f)
		}
	}
	return r
}

// judgeSaid is what the judge wrote to stderr through make: make's own
// line ("make: *** [Makefile:N: judge] Error 2", make[1]: under another
// make) taken out.
func judgeSaid(stderr string) (said, makes string) {
	for _, l := range strings.SplitAfter(stderr, "\n") {
		if makeLine.MatchString(l) {
			makes += l
		} else {
			said += l
		}
	}
	return said, makes
}

var makeLine = regexp.MustCompile(`^make(\[\d+\])?: `)

// A teacher loops `make judge LOCK=$dir` over a class's folders: whatever
// a folder is called, nothing in its name runs, in `make -n` or in make,
// and the judge gets the name as it is: it judges the folder when it is
// there (the package copied into a module of the judge's, so no import
// path is made of its name), and refuses it in one line when it is not.
func TestMakeJudge_runsNothingAFolderNameHolds(t *testing.T) {
	needsRedisServer(t)
	root := repo(t)
	dir := mirror(t, root)
	class := filepath.Join(dir, "class")
	for _, c := range []struct {
		folder string
		exists bool
	}{
		{`it's my "lock"`, true},
		{"$(shell touch pwned)", true},
		{"q';touch pwned;'", false},
		{"$(touch pwned)", false},
		{"`touch pwned`", false},
	} {
		t.Run(c.folder, func(t *testing.T) {
			if c.exists {
				learner(t, root, class, c.folder, nil)
			}
			lock := "LOCK=./class/" + c.folder
			dry := runMake(t, dir, t.TempDir(), "-n", "judge", lock, "STEP=2", "ONLY=ttl-refused")
			if dry.code != 0 || len(dry.made) > 0 || !strings.Contains(dry.stdout, "judge -root . -lock ") {
				t.Errorf("make -n judge %q = %d, made %q; stdout %q, stderr %q", lock, dry.code, dry.made, dry.stdout, dry.stderr)
			}
			tmp := t.TempDir()
			r := runMake(t, dir, tmp, "judge", lock, "STEP=2", "ONLY=ttl-refused")
			if len(r.made) > 0 {
				t.Errorf("make judge %q made %q", lock, r.made)
			}
			said, makes := judgeSaid(r.stderr)
			switch {
			case c.exists:
				if r.code != 0 || !strings.Contains(r.stdout, "1 property: 1 pass") || !strings.Contains(r.stdout, "judge: ./class/"+c.folder+" declares Acquire, Release") {
					t.Errorf("make judge %q = %d, want 0 and the folder judged; stdout:\n%s\nstderr:\n%s", lock, r.code, r.stdout, r.stderr)
				}
			default:
				oneLine(t, "the judge's stderr", said, "does not exist")
				if r.code != 2 || !strings.HasSuffix(makes, "Error 2\n") || r.stdout != "" {
					t.Errorf("make judge %q = %d, make said %q, stdout %q; want the judge's exit 2 and nothing on stdout", lock, r.code, makes, r.stdout)
				}
			}
			if left := files(t, tmp); len(left) > 0 {
				t.Errorf("make judge %q left %q in TMPDIR", lock, left)
			}
		})
	}
}

// HTML= is a path like any other: a name with a space is one file.
func TestMakeJudge_writesAPageWhoseNameHasASpace(t *testing.T) {
	needsRedisServer(t)
	dir := mirror(t, repo(t))
	r := runMake(t, dir, t.TempDir(), "judge", "STEP=2", "ONLY=ttl-refused", "HTML=my page.html")
	if r.code != 0 || !slices.Equal(r.made, []string{"my page.html"}) {
		t.Errorf("make judge HTML='my page.html' = %d, made %q, want 0 and the page; stdout:\n%s\nstderr:\n%s", r.code, r.made, r.stdout, r.stderr)
	}
}

// A page the judge could not write is refused before any work, for a
// known lock and for a folder's (before its program is built): one line,
// the judge's exit 2, nothing judged, nothing left.
func TestMakeJudge_refusesAPageItCouldNotWriteBeforeAnyWork(t *testing.T) {
	root := repo(t)
	dir := mirror(t, root)
	learner(t, root, dir, "mine", nil)
	if err := os.Mkdir(filepath.Join(dir, "pages"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.html"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, page := range []struct{ html, want string }{
		{"nowhere/page.html", "does not exist"},
		{"pages", "is a folder"},
		{"pipe.html", "named pipe"},
	} {
		for _, lock := range []string{"", "LOCK=./mine"} {
			t.Run(page.html+lock, func(t *testing.T) {
				tmp := t.TempDir()
				args := []string{"judge", "STEP=2", "HTML=" + page.html}
				if lock != "" {
					args = append(args, lock)
				}
				r := runMake(t, dir, tmp, args...)
				said, makes := judgeSaid(r.stderr)
				oneLine(t, "the judge's stderr", said, "-html "+page.html, page.want)
				if r.code != 2 || !strings.HasSuffix(makes, "Error 2\n") || r.stdout != "" || len(r.made) > 0 {
					t.Errorf("make %q = %d, make said %q, stdout %q, made %q; want the judge's exit 2, and nothing done", args, r.code, makes, r.stdout, r.made)
				}
				if left := files(t, tmp); len(left) > 0 {
					t.Errorf("make %q left %q in TMPDIR", args, left)
				}
			})
		}
	}
}
