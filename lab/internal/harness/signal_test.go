//go:build unix

package harness

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestHelperProgram is the program the tests below run as a process of
// its own: it says "ready", waits for Ctrl-C, and then cleans up briefly
// (CLI_HELPER=clean) or for good (hang). With CLI_HELPER=pipe it prints
// lines until its context ends, then writes what ended it to the file
// CLI_HELPER_FILE: its clean-up, which a closed stdout must not prevent.
func TestHelperProgram(t *testing.T) {
	mode := os.Getenv("CLI_HELPER")
	if mode == "" {
		t.Skip("run by TestMain_* and TestCommand_* as a process of its own")
	}
	Main(func(ctx context.Context, _ []string, stdout, _ io.Writer) int {
		if mode == "pipe" {
			for i := 0; ctx.Err() == nil; i++ {
				fmt.Fprintln(stdout, "line", i)
				time.Sleep(5 * time.Millisecond)
			}
			fmt.Fprintln(stdout, "a write after the end must not kill the program")
			os.WriteFile(os.Getenv("CLI_HELPER_FILE"), []byte("cleaned up after "+Why(ctx)), 0o600)
			return ExitInterrupted
		}
		fmt.Fprintln(stdout, "ready")
		<-ctx.Done()
		fmt.Fprintln(stdout, "interrupted by "+Why(ctx))
		if mode == "hang" {
			time.Sleep(time.Minute)
		}
		time.Sleep(200 * time.Millisecond)
		fmt.Fprintln(stdout, "cleaned up")
		return ExitInterrupted
	})
}

// helper starts the helper program with cmd and returns its stdout lines.
func helper(t *testing.T, cmd *exec.Cmd, mode string) <-chan string {
	t.Helper()
	cmd.Env = append(os.Environ(), "CLI_HELPER="+mode)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 10)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return lines
}

func expectLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	select {
	case got := <-lines:
		if got != want {
			t.Fatalf("the program printed %q, want %q", got, want)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the program did not print %q within 30s", want)
	}
}

// Ctrl-C, a kill from a supervisor and a closed terminal end a run the
// same way: the program hears of it, cleans up and exits 130.
func TestMain_firstSignalLetsTheProgramCleanUp(t *testing.T) {
	for _, tt := range []struct {
		sig  syscall.Signal
		name string
	}{{syscall.SIGINT, "Ctrl-C"}, {syscall.SIGTERM, "SIGTERM"}, {syscall.SIGHUP, "SIGHUP"}} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProgram$")
			lines := helper(t, cmd, "clean")
			expectLine(t, lines, "ready")
			cmd.Process.Signal(tt.sig)
			expectLine(t, lines, "interrupted by "+tt.name)
			expectLine(t, lines, "cleaned up")
			if err := cmd.Wait(); cmd.ProcessState.ExitCode() != ExitInterrupted {
				t.Errorf("exit: %v, want status %d", err, ExitInterrupted)
			}
		})
	}
}

// `prog | head -2`: once the reader has gone, the next write fails, and
// that ends the run like Ctrl-C instead of killing the process with
// SIGPIPE before it cleans up.
func TestMain_closedStdoutEndsTheRunAndLetsItCleanUp(t *testing.T) {
	file := filepath.Join(t.TempDir(), "cleaned")
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProgram$")
	cmd.Env = append(os.Environ(), "CLI_HELPER=pipe", "CLI_HELPER_FILE="+file)
	cmd.Stdout = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(r)
	for _, want := range []string{"line 0", "line 1"} {
		if !sc.Scan() || sc.Text() != want {
			t.Fatalf("the program printed %q (%v), want %q", sc.Text(), sc.Err(), want)
		}
	}
	r.Close() // as head does after two lines
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := cmd.ProcessState.ExitCode(); code != ExitInterrupted {
			t.Errorf("exit: %v (%v), want status %d, not death by SIGPIPE", err, cmd.ProcessState, ExitInterrupted)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the program did not end within 30s of its stdout closing")
	}
	if got, err := os.ReadFile(file); err != nil || string(got) != "cleaned up after a closed output" {
		t.Errorf("the clean-up wrote %q (%v), want %q", got, err, "cleaned up after a closed output")
	}
}

func TestMain_secondCtrlCExitsAtOnce(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProgram$")
	lines := helper(t, cmd, "hang")
	expectLine(t, lines, "ready")
	cmd.Process.Signal(syscall.SIGINT)
	expectLine(t, lines, "interrupted by Ctrl-C")
	cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the second Ctrl-C did not end the program within 5s")
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the program ended with %v, want killed by SIGINT", cmd.ProcessState)
	}
}

// Command's program gets one interrupt when ctx ends, not a kill, and
// cleans up; it runs in a process group of its own, out of the reach of
// the terminal's Ctrl-C.
func TestCommand_interruptsTheProgramInsteadOfKillingIt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cmd := Command(ctx, os.Args[0], "-test.run=^TestHelperProgram$")
	lines := helper(t, cmd, "clean")
	expectLine(t, lines, "ready")
	if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
		t.Errorf("process group %d (%v), want its own, %d", pgid, err, cmd.Process.Pid)
	}
	cancel()
	expectLine(t, lines, "interrupted by Ctrl-C")
	expectLine(t, lines, "cleaned up")
	if err := cmd.Wait(); cmd.ProcessState.ExitCode() != ExitInterrupted {
		t.Errorf("exit: %v, want status %d", err, ExitInterrupted)
	}
}
