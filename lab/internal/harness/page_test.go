package harness

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// pageAsEnv makes this test binary check a page and print the result, as
// another user (TestCheckPageOf_aFileOfRootsAsAnotherUser).
const pageAsEnv = "WALLETLOCK_TEST_CHECK_PAGE"

func TestMain(m *testing.M) {
	if path, ok := os.LookupEnv(pageAsEnv); ok {
		fmt.Println(CheckPageOf("-history", path))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// openDir is a folder anyone may enter and read, which the test removes.
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "walletlock-page-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// refused runs CheckPageOf on path and wants one line that names the flag,
// the path and want, within a moment (a named pipe must not block it).
func refused(t *testing.T, path, want string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- CheckPageOf("-history", path) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("CheckPageOf(%s) blocks", path)
	}
	switch {
	case err == nil:
		t.Fatalf("CheckPageOf(%s) = nil, want it refused before any work: %s", path, want)
	case !strings.HasPrefix(err.Error(), "-history "+path) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "\n"):
		t.Errorf("CheckPageOf(%s) = %q, want one line naming -history, the path and %q", path, err, want)
	}
}

// Issue 35, item 11: each of these passed the check, then failed after
// the work (or, the pipe, blocked it forever).
func TestCheckPageOf_refusesWhatTheWriteWouldFailOn(t *testing.T) {
	t.Run("a dangling symbolic link", func(t *testing.T) {
		dir := openDir(t)
		path := filepath.Join(dir, "h.html")
		if err := os.Symlink(filepath.Join(dir, "gone", "h.html"), path); err != nil {
			t.Fatal(err)
		}
		refused(t, path, "is a symbolic link to "+filepath.Join(dir, "gone", "h.html")+", which does not exist")
	})
	t.Run("a named pipe", func(t *testing.T) {
		path := filepath.Join(openDir(t), "h.html")
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		refused(t, path, "is a named pipe, not a file")
	})
	t.Run("an immutable file", func(t *testing.T) {
		path := filepath.Join(openDir(t), "h.html")
		if err := os.WriteFile(path, []byte("the old page"), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			t.Skipf("chattr +i needs root and a file system that has it: %v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
		refused(t, path, "cannot be written (operation not permitted)")
	})
}

// A file of root's, 0644, in a folder anyone may write (as /tmp): a
// program that another user runs could create a page beside it, but not
// write this one.
func TestCheckPageOf_aFileOfRootsAsAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the check as another user (setpriv)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("needs setpriv (util-linux)")
	}
	dir := openDir(t)
	if err := os.Chmod(dir, 0o1777); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "h.html")
	if err := os.WriteFile(path, []byte("root's page"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "harness.test") // the go tool's folder is root's alone
	copyFile(t, os.Args[0], bin)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
	cmd.Env = append(os.Environ(), pageAsEnv+"="+path)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s as nobody: %v: %s", bin, err, out)
	}
	if got := strings.TrimSpace(string(out)); !strings.HasPrefix(got, "-history "+path+" cannot be written (permission denied)") {
		t.Errorf("as nobody, CheckPageOf(a file of root's) = %q, want it refused: permission denied", got)
	}
	if b, _ := os.ReadFile(path); string(b) != "root's page" {
		t.Errorf("the check changed the file: %q", b)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// A page written to a named pipe fails at once, whether anyone reads it
// or not, and the reader gets nothing: the write neither blocks (and with
// it Ctrl-C) nor writes a page into a pipe.
func TestSavePage_refusesANamedPipeWithoutBlocking(t *testing.T) {
	path := filepath.Join(openDir(t), "h.html")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	page := func(w io.Writer) error { _, err := io.WriteString(w, "<html>"); return err }
	save := func() error {
		done := make(chan error, 1)
		go func() { done <- SavePage(path, page) }()
		select {
		case err := <-done:
			return err
		case <-time.After(30 * time.Second):
			t.Fatal("SavePage to a named pipe blocks")
			return nil
		}
	}
	if err := save(); err == nil {
		t.Error("SavePage to a named pipe nobody reads = nil, want an error")
	}
	r, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := save(); err == nil || !strings.Contains(err.Error(), "is a named pipe, not a file") {
		t.Errorf("SavePage to a named pipe someone reads = %v, want it refused as a named pipe", err)
	}
	buf := make([]byte, 16)
	if n, err := r.Read(buf); n > 0 || (err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EAGAIN)) {
		t.Errorf("the pipe's reader got %q (%v), want nothing", buf[:n], err)
	}
}

// CheckPageOf leaves a folder as it found it, and an existing page as it
// was: nothing is written before the work.
func TestCheckPageOf_writesNothing(t *testing.T) {
	dir := openDir(t)
	old := filepath.Join(dir, "old.html")
	if err := os.WriteFile(old, []byte("the old page"), 0o644); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(old)
	for _, path := range []string{old, filepath.Join(dir, "new.html")} {
		if err := CheckPageOf("-history", path); err != nil {
			t.Errorf("CheckPageOf(%s) = %v, want nil", path, err)
		}
	}
	after, _ := os.Stat(old)
	if b, _ := os.ReadFile(old); string(b) != "the old page" || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the old page changed: %q", b)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("the folder holds %d files, want the 1 it had", len(left))
	}
}

// A page in a folder that does not take one is refused, naming the flag.
func TestCheckPageOf_aFolderThatTakesNoPage(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "x")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, path, want string }{
		{"a new file in a folder", filepath.Join(dir, "room.html"), ""},
		{"a folder that does not exist", filepath.Join(dir, "missing", "room.html"), "does not exist"},
		{"a folder", dir, "is a folder"},
		{"a file as the folder", filepath.Join(file, "room.html"), "is not a folder"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckPageOf("-html", tt.path)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "-html ")) {
				t.Errorf("CheckPageOf(%s) = %v, want %q", tt.path, err, tt.want)
			}
		})
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Errorf("CheckPageOf left %d files in the folder, want only the one there before", len(left)-1)
	}
}
