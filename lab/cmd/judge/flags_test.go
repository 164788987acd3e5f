//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// What is wrong with the command line is refused before any work: for a
// lock the judge knows, and for a folder's or a mutant's before the
// program that judges it is built. One line, exit 2, nothing on stdout,
// nothing left in TMPDIR.
func TestJudge_refusesBadInputBeforeAnyWork(t *testing.T) {
	root := repo(t)
	dir := t.TempDir() // a class's module, with a learner's folder in it
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/class\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pkg := learner(t, root, dir, "mine", nil)
	if err := os.Mkdir(filepath.Join(dir, "pages"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "pipe.html"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a page in no folder", []string{"-html", "nowhere/page.html"}, "the folder nowhere does not exist"},
		{"a page that is a folder", []string{"-html", "pages"}, "-html pages is a folder"},
		{"a page that is a FIFO", []string{"-html", "pipe.html"}, "-html pipe.html is a named pipe"},
		{"a seed too large", []string{"-seed", "99999999999999999999"}, "is too large"},
		{"STEP=,", []string{"-chapter", ","}, "the chapters are"},
		{"ONLY outside STEP", []string{"-chapter", "lease", "-only", "stale-write"}, "-only stale-write is a property of the fencing chapter, which -chapter leaves out"},
	} {
		for _, lock := range []string{"root", pkg, "mutant:release-get-del"} {
			t.Run(c.name+"/"+filepath.Base(lock), func(t *testing.T) {
				tmp := t.TempDir()
				r := runJudge(t, dir, tmp, append([]string{"-root", root, "-lock", lock}, c.args...)...)
				if r.code != 2 || r.stdout != "" {
					t.Errorf("judge %q = %d, stdout %q; want 2 and nothing", c.args, r.code, r.stdout)
				}
				oneLine(t, "stderr", r.stderr, c.want)
				if left := files(t, tmp); len(left) > 0 {
					t.Errorf("judge %q left %q in TMPDIR: it built or started something", c.args, left)
				}
			})
		}
	}
}

// LOCK= that names no folder says so, and not that the folder is in no
// Go module.
func TestJudge_aLockFolderThatDoesNotExist(t *testing.T) {
	tmp := t.TempDir()
	r := runJudge(t, t.TempDir(), tmp, "-root", repo(t), "-lock", "/nonexistent/x")
	if r.code != 2 || r.stdout != "" {
		t.Errorf("judge -lock /nonexistent/x = %d, stdout %q; want 2 and nothing", r.code, r.stdout)
	}
	oneLine(t, "stderr", r.stderr, "LOCK='/nonexistent/x' does not exist")
}
