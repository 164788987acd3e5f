package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// InterruptProcs is Interrupt for a run whose spenders are processes of
// its own (-procs, see internal/harness/procs.go). Besides what Interrupt requires, it
// requires that the program signals no one else: a process the test
// started in its own process group, as a shell would start a neighbour of
// the program, still runs after the Ctrl-C; and that none of the
// program's processes outlives its run (checked where /proc exists).
func InterruptProcs(t *testing.T, run Program, c CtrlC) (stdout, stderr string) {
	t.Helper()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skipf("testenv: no sleep command for a bystander process: %v", err)
	}
	bystander := exec.Command(sleep, "60")
	if err := bystander.Start(); err != nil {
		t.Fatalf("testenv: start a bystander process: %v", err)
	}
	exited := make(chan struct{})
	go func() { bystander.Wait(); close(exited) }()
	t.Cleanup(func() { bystander.Process.Kill(); <-exited })

	stdout, stderr = Interrupt(t, run, c)
	select {
	case <-exited:
		t.Errorf("the bystander process (pid %d, in the test's process group) died during the run: the program signalled a process it did not start", bystander.Process.Pid)
	default:
	}
	if left := ownChildren(t); len(left) > 0 {
		t.Errorf("processes the program started are still there after it returned: pids %v", left)
	}
	return stdout, stderr
}

// ownChildren returns the pids of the processes, zombies included, whose
// parent is this test process and which run this test binary: the copies
// of the program a -procs run started. Without /proc it returns none.
func ownChildren(t *testing.T) []int {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	comm := filepath.Base(exe)
	if len(comm) > 15 { // the kernel keeps 15 bytes of a command's name
		comm = comm[:15]
	}
	return Processes(func(dir string) bool {
		stat, err := os.ReadFile(filepath.Join(dir, "stat"))
		if err != nil {
			return false // gone meanwhile
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		s := string(stat)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			return false
		}
		fields := strings.Fields(s[end+1:])
		return len(fields) >= 2 && s[open+1:end] == comm && fields[1] == strconv.Itoa(os.Getpid())
	})
}

// Processes returns the pids of the processes for which match, given the
// process's folder in /proc, says true. Without /proc it returns none.
func Processes(match func(dir string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && match(filepath.Join("/proc", e.Name())) {
			pids = append(pids, pid)
		}
	}
	return pids
}
