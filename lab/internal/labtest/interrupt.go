package labtest

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/harness"
)

// interruptGuard is how long a program may take to return after Ctrl-C:
// its clean-up bound plus room for a busy machine. It catches a hang; it is
// not a speed test.
const interruptGuard = harness.CleanupTimeout + 4*time.Second

// CtrlC is a Ctrl-C in the middle of a run, for Interrupt.
type CtrlC struct {
	Args   []string      // the command line; Interrupt adds -prefix
	Key    string        // the work is under way once prefix+Key exists ("": the run lease)
	After  time.Duration // how long after that the Ctrl-C comes
	Frozen bool          // freeze the server (SIGSTOP) just before the Ctrl-C
	// Swamped allows what a frozen server forces: a run at the bounds can
	// keep the server so busy that the clean-up runs out of time. It must
	// return as promptly, and name what it leaves.
	Swamped bool
}

// Interrupt runs the program against a redis-server of the test's own and
// presses Ctrl-C (cancels its context) in the middle of its work. It
// requires what every program must do then: return 130 within
// interruptGuard, say that it was interrupted, and either leave nothing
// under its prefix or, when the server is frozen (or swamped), name what
// may be left, with the redis-cli command that deletes it.
func Interrupt(t *testing.T, run Program, c CtrlC) (stdout, stderr string) {
	t.Helper()
	srv := StartRedis(t)
	rdb := srv.Use(t)
	prefix := Prefix(t, rdb)
	args := append([]string{"-prefix", prefix}, c.Args...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := prefix + c.Key
	if c.Key == "" {
		key = harness.LeaseKey(prefix)
	}
	out, errOut, done := startUntil(t, ctx, run, args, rdb, key)
	time.Sleep(c.After)
	if c.Frozen {
		srv.Freeze(t)
	}
	start := time.Now()
	cancel()
	var code int
	select {
	case code = <-done:
	case <-time.After(interruptGuard):
		t.Fatalf("run(%q) still runs %v after Ctrl-C", args, interruptGuard)
	}
	took := time.Since(start)
	stdout, stderr = out.String(), errOut.String()
	t.Logf("run(%q) returned %d %v after Ctrl-C", args, code, took.Round(time.Millisecond))

	if code != harness.ExitInterrupted {
		t.Errorf("run(%q) = %d after Ctrl-C, want %d; stderr:\n%s", args, code, harness.ExitInterrupted, stderr)
	}
	if !strings.Contains(stderr, "interrupted by Ctrl-C") {
		t.Errorf("stderr = %q, want it to say the run was interrupted by Ctrl-C", stderr)
	}
	var named []string // lines that name a command to delete leftovers
	for _, line := range strings.Split(stderr, "\n") {
		if strings.Contains(line, "redis-cli") {
			named = append(named, line)
		}
	}
	if c.Swamped && len(named) > 0 {
		t.Logf("the clean-up ran out of time: %s", named[0])
		c.Frozen = true // and so the line must be as for a frozen server
	}
	if !c.Frozen {
		if len(named) > 0 {
			t.Errorf("stderr names leftovers with a live server: %q", named)
		}
		nothingLeft(t, rdb, prefix)
		return stdout, stderr
	}
	if len(named) != 1 || !strings.Contains(named[0], srv.Addr[strings.LastIndex(srv.Addr, ":")+1:]) ||
		!strings.Contains(named[0], " del") || !strings.Contains(named[0], prefix) {
		t.Errorf("stderr = %q, want one line naming the keys under %s that may be left and the redis-cli command, with this server's port, that deletes them", stderr, prefix)
	}
	return stdout, stderr
}

// startUntil runs the program with args in a goroutine and returns, with
// its output so far and the channel its exit code comes on, once key
// exists. The test fails when the program returns first, or key does not
// appear within a minute.
func startUntil(t *testing.T, ctx context.Context, run Program, args []string, rdb redis.UniversalClient, key string) (out, errOut *bytes.Buffer, done chan int) {
	t.Helper()
	out, errOut, done = new(bytes.Buffer), new(bytes.Buffer), make(chan int, 1)
	go func() { done <- run(ctx, args, out, errOut) }()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if rdb.Exists(context.Background(), key).Val() > 0 {
			return out, errOut, done
		}
		select {
		case code := <-done:
			t.Fatalf("run(%q) returned %d before %s appeared:\nstdout:\n%s\nstderr:\n%s", args, code, key, out.String(), errOut.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	t.Fatalf("%s did not appear within a minute", key)
	return nil, nil, nil
}

// nothingLeft requires that no key is left under prefix.
func nothingLeft(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	if keys := rdb.Keys(context.Background(), prefix+"*").Val(); len(keys) > 0 {
		t.Errorf("keys left under the prefix: %q", keys)
	}
}

// SecondRunRefused starts the program with args (a run of a second or so)
// and, while it runs, again on the same prefix: the second must fail at
// once, naming the prefix and -prefix (FailsInOneLine), the first go on
// undisturbed and exit 0.
func SecondRunRefused(t *testing.T, run Program, args ...string) {
	t.Helper()
	rdb := testenv.Redis(t)
	prefix := Prefix(t, rdb)
	args = append([]string{"-prefix", prefix}, args...)
	out, errOut, done := startUntil(t, t.Context(), run, args, rdb, harness.LeaseKey(prefix))
	FailsInOneLine(t, run, args, prefix, "-prefix")
	if code := <-done; code != 0 {
		t.Errorf("the first run = %d, want 0: the second must not disturb it; stdout:\n%s\nstderr:\n%s", code, out.String(), errOut.String())
	}
	nothingLeft(t, rdb, prefix)
}
