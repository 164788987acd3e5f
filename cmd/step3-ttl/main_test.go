package main

import (
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var phaseLine = regexp.MustCompile(`(?m)^phase (\d): accepted=\d+ balance=\d+ expected=-?\d+ (OK|BROKEN)$`)

// Phase 1 loses a spend, phase 2's watchdog keeps the lease, phase 3's
// watchdog stops the spend whose lease was taken: BROKEN, OK, OK.
func TestStep3_phasesGiveTheLessonsVerdicts(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	ran := testenv.Run(t, "-prefix", prefix)
	var got []string
	for _, m := range phaseLine.FindAllStringSubmatch(ran.Stdout, -1) {
		got = append(got, m[1]+" "+m[2])
	}
	if want := "1 BROKEN,2 OK,3 OK"; strings.Join(got, ",") != want || ran.Code != 0 {
		t.Errorf("exit %d, phases %v, want %s; stdout:\n%s\nstderr:\n%s", ran.Code, got, want, ran.Stdout, ran.Stderr)
	}
	// Phase 3's spend is stopped, and says why.
	if !strings.Contains(ran.Stderr, "stopped before the write") || !strings.Contains(ran.Stderr, "not held") {
		t.Errorf("stderr does not say why phase 3's spend stopped:\n%s", ran.Stderr)
	}
}

// Ctrl-C, SIGTERM and SIGHUP stop the run, which deletes its keys and
// exits 130; while it runs, a second run on the same keys is refused.
func TestStep3_signalsCleanUpAndASecondRunIsRefused(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		prefix := testenv.Prefix(t, rdb)
		run := testenv.Start(t, "-prefix", prefix)
		for rdb.Exists(t.Context(), prefix+"wallet:42:balance").Val() == 0 {
			time.Sleep(10 * time.Millisecond) // until the first phase has begun
		}
		second := testenv.Run(t, "-prefix", prefix)
		if second.Code != 1 || !strings.Contains(second.Stderr, "another run holds") || !strings.Contains(second.Stderr, "-prefix") {
			t.Errorf("a second run on the same prefix: exit %d, stderr %q", second.Code, second.Stderr)
		}
		run.Cmd.Process.Signal(sig)
		ran := run.Wait(t)
		if ran.Code != 130 {
			t.Errorf("%v: exit %d, want 130; stderr %q", sig, ran.Code, ran.Stderr)
		}
		if keys := rdb.Keys(t.Context(), prefix+"*").Val(); len(keys) != 0 {
			t.Errorf("%v: keys left behind: %v", sig, keys)
		}
	}
}

// A closed output (a pipe whose reader has gone) ends the run as a signal
// does: its keys are deleted.
func TestStep3_aClosedOutputCleansUp(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	cmd := exec.CommandContext(t.Context(), testenv.Bin, "-prefix", prefix)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out.Close() // nobody reads: the first line fails
	cmd.Wait()
	if cmd.ProcessState.ExitCode() == 0 {
		t.Error("exit 0 after its output could not be written")
	}
	if keys := rdb.Keys(t.Context(), prefix+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left behind: %v", keys)
	}
}

// A run whose lease is taken from it stops, in one line that says so; the
// lease's new holder keeps it.
func TestStep3_aLostRunLeaseEndsTheRun(t *testing.T) {
	t.Parallel()
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	run := testenv.Start(t, "-prefix", prefix)
	for rdb.Exists(t.Context(), prefix+"wallet:42:balance").Val() == 0 {
		time.Sleep(10 * time.Millisecond) // until the first phase has begun
	}
	rdb.Set(t.Context(), prefix+"walletlock:run", "another-run", time.Minute) // as if this run had stalled past its lease
	ran := run.Wait(t)
	if ran.Code != 1 || !strings.Contains(ran.Stderr, "lost the run's lease") {
		t.Errorf("exit %d, stderr %q; want exit 1 and a line that says the run lost its lease", ran.Code, ran.Stderr)
	}
	if got := rdb.Get(t.Context(), prefix+"walletlock:run").Val(); got != "another-run" {
		t.Errorf("the lease holds %q after the run, want the new holder's value", got)
	}
}
