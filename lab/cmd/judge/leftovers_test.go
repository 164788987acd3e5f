//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/labtest"
)

// started is a judge process a test stops.
type started struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
}

// startJudge starts the judge program in a process group of its own, as
// a shell starts a command, with TMPDIR tmp.
func startJudge(t *testing.T, dir, tmp string, args ...string) *started {
	t.Helper()
	s := &started{cmd: judgeCmd(t, dir, tmp, args...), done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
	})
	return s
}

// exit waits for the judge to end, and returns its exit code (-1 when a
// signal ended it).
func (s *started) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-s.done:
		return s.cmd.ProcessState.ExitCode()
	case <-time.After(hangGuard):
		t.Fatalf("the judge still runs %v after it was stopped; stderr:\n%s", hangGuard, s.stderr.String())
		return 0
	}
}

// await waits until a path that matches pattern exists, while the judge
// runs, and returns it.
func (s *started) await(t *testing.T, pattern string) string {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		if m, _ := filepath.Glob(pattern); len(m) > 0 {
			return m[0]
		}
		select {
		case <-s.done:
			t.Fatalf("the judge ended before %s appeared; stdout:\n%s\nstderr:\n%s", pattern, s.stdout.String(), s.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not appear within %v", pattern, hangGuard)
	return ""
}

// processesGone waits until no process has tmp as its TMPDIR: every
// process the judge started (holders, redis-server, go build and the
// compiler) inherits it. It returns the command lines of those left.
func processesGone(tmp string) []string {
	tag := []byte("TMPDIR=" + tmp + "\x00")
	var left []string
	for range 100 {
		left = nil
		for _, pid := range labtest.Processes(func(dir string) bool {
			env, _ := os.ReadFile(filepath.Join(dir, "environ"))
			return bytes.Contains(env, tag)
		}) {
			cmdline, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			left = append(left, strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
		if len(left) == 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return left
}

// A Ctrl-C while the judge builds the program that judges a folder (the
// terminal sends SIGINT to the judge, go build and the compiler alike)
// leaves no folder of go build's, nor of the judge's, and no process:
// go build's own temporary files are in the judge's folder (GOTMPDIR).
func TestJudge_ctrlCWhileBuildingLeavesNothing(t *testing.T) {
	root := repo(t)
	// A package go has not compiled before, so that there is a build to
	// interrupt.
	pkg := learner(t, root, class(t), "mine", replace(t, "", "// "+t.Name()+" "+time.Now().String()))
	tmp := t.TempDir()
	s := startJudge(t, filepath.Dir(pkg), tmp, "-root", root, "-lock", "./mine", "-chapter", "lease")
	s.await(t, filepath.Join(tmp, "walletlock-judge-build-*", "go-tmp", "go-build*"))
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
	if code := s.exit(t); code != 130 {
		t.Errorf("the judge = %d after Ctrl-C, want 130; stderr:\n%s", code, s.stderr.String())
	}
	oneLine(t, "stderr", s.stderr.String(), "stopped by Ctrl-C while building the judging program")
	if left := processesGone(tmp); len(left) > 0 {
		t.Errorf("processes left: %q", left)
	}
	if left := files(t, tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %q", left)
	}
}

// A judge killed with SIGKILL leaves its folder, with what its
// redis-server wrote there, but no process: its servers and holders die
// with it. The next judge removes the folder, as its owner is provably
// dead, and says so in one line.
func TestJudge_theNextJudgeRemovesWhatAKilledOneLeft(t *testing.T) {
	needsRedisServer(t)
	root := repo(t)
	tmp := t.TempDir()
	s := startJudge(t, root, tmp, "-root", root, "-chapter", "faults", "-only", "restart-keeps")
	aof := s.await(t, filepath.Join(tmp, "walletlock-judge-*", "restart-*", "appendonlydir"))
	s.cmd.Process.Kill()
	s.exit(t)
	folder := filepath.Dir(filepath.Dir(aof))
	if _, err := os.Stat(aof); err != nil {
		t.Fatalf("the killed judge's folder is not there: %v", err)
	}
	if left := processesGone(tmp); len(left) > 0 {
		t.Errorf("processes left by the killed judge: %q", left)
	}
	theNextJudgeRemoves(t, root, tmp, folder)
}

// A judge of a folder killed with SIGKILL while its program judges: the
// program ends at its next line to the dead judge (its output is closed),
// with its own clean-up; the next judge removes the dead judge's build
// folder and says so in one line.
func TestJudge_theNextJudgeRemovesTheBuildOfAKilledOne(t *testing.T) {
	needsRedisServer(t)
	root := repo(t)
	pkg := learner(t, root, class(t), "mine", nil)
	tmp := t.TempDir()
	s := startJudge(t, filepath.Dir(pkg), tmp, "-root", root, "-lock", "./mine", "-chapter", "lease")
	build := filepath.Dir(s.await(t, filepath.Join(tmp, "walletlock-judge-build-*", "judge")))
	s.await(t, filepath.Join(tmp, "walletlock-judge-[0-9]*", "owner"))
	s.cmd.Process.Kill()
	s.exit(t)
	if left := processesGone(tmp); len(left) > 0 {
		t.Errorf("processes left by the killed judge: %q", left)
	}
	theNextJudgeRemoves(t, root, tmp, build)
}

// theNextJudgeRemoves runs a judge with TMPDIR tmp, and requires that it
// removes folder, left by a killed judge, says so in one line, and leaves
// nothing.
func theNextJudgeRemoves(t *testing.T, root, tmp, folder string) {
	t.Helper()
	next := runJudge(t, root, tmp, "-root", root, "-chapter", "lease", "-only", "ttl-refused")
	if next.code != 0 {
		t.Errorf("the next judge = %d, want 0; stderr:\n%s", next.code, next.stderr)
	}
	oneLine(t, "the next judge's stderr", next.stderr, "judge: removed what judges killed before their clean-up left: folder "+folder)
	if left := files(t, tmp); len(left) > 0 {
		t.Errorf("left in TMPDIR: %q", left)
	}
}
