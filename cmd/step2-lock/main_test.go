package main

import (
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// With the lock, ten spends go through and the balance ends at zero, on
// every run, and no lock is left behind.
func TestStep2_okOnEveryRun(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	for run := range 5 {
		ran := testenv.Run(t, "-prefix", prefix)
		if ran.Code != 0 || ran.Stdout != "accepted=10 balance=0 expected=0 OK\n" || ran.Stderr != "" {
			t.Fatalf("run %d: exit %d, stdout %q, stderr %q", run, ran.Code, ran.Stdout, ran.Stderr)
		}
		if n := rdb.Exists(t.Context(), prefix+"lock:wallet:42", prefix+"wallet:42:balance").Val(); n != 0 {
			t.Fatalf("run %d left the lock or the balance behind", run)
		}
	}
}

// A bad flag is refused before anything runs, in one line, with exit 2.
func TestStep2_badFlagsExit2(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"-ttl", "0"}, "-ttl must be from 1ms"},
		{[]string{"-ttl", "500us"}, "-ttl must be from 1ms"},
		{[]string{"-n", "0"}, "-n must be from 1"},
		{[]string{"-n", "lots"}, "-n"},
		{[]string{"-prefix", "a b"}, "-prefix takes"},
		{[]string{"-prefix", "a*"}, "-prefix takes"},
		{[]string{"extra"}, "'extra'"},
	} {
		ran := testenv.Run(t, tt.args...)
		first, _, _ := strings.Cut(ran.Stderr, "\n")
		if ran.Code != 2 || ran.Stdout != "" || !strings.Contains(first, tt.says) {
			t.Errorf("%q: exit %d, stdout %q, first line %q; want exit 2 and a line that says %q", tt.args, ran.Code, ran.Stdout, first, tt.says)
		}
	}
}

// With no Redis where the environment says, the program says so and what
// to do, in one line.
func TestStep2_noRedis(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := closed.Addr().String()
	closed.Close()
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", addr)
	ran := testenv.Run(t)
	if ran.Code != 1 || strings.Count(ran.Stderr, "\n") != 1 || !strings.Contains(ran.Stderr, addr) || !strings.Contains(ran.Stderr, "make up") {
		t.Errorf("exit %d, stderr %q; want exit 1 and one line naming %s and `make up`", ran.Code, ran.Stderr, addr)
	}
}

// An output that cannot be written (a full disk here) fails the run, with
// -json as without, in one line that says so; the run's keys are gone.
func TestStep2_anOutputThatCannotBeWrittenExits1(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip("no /dev/full here:", err)
	}
	defer full.Close()
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	for _, mode := range []string{"-json=false", "-json"} {
		var stderr strings.Builder
		cmd := exec.CommandContext(t.Context(), testenv.Bin, "-prefix", prefix, mode)
		cmd.Stdout, cmd.Stderr = full, &stderr
		cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(stderr.String(), "output could not be written") || strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line that says its output could not be written", mode, code, stderr.String())
		}
		if keys := rdb.Keys(t.Context(), prefix+"*").Val(); len(keys) != 0 {
			t.Errorf("%s: keys left behind: %v", mode, keys)
		}
	}
}
