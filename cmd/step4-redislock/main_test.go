package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/runlease"
	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// runStep runs the program with args plus a -prefix of the test's own and
// returns its exit code, stdout and stderr.
func runStep(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	rdb := testenv.Redis(t)
	args = append(args, "-prefix", testenv.Prefix(t, rdb))
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// runJSON runs the program with -json and parses what it prints.
func runJSON(t *testing.T, args ...string) (int, jsonOutput) {
	t.Helper()
	code, stdout, stderr := runStep(t, append(args, "-json")...)
	var out jsonOutput
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("-json output does not parse: %v\nstdout:\n%s\nstderr:\n%s", err, stdout, stderr)
	}
	return code, out
}

type jsonOutput struct {
	N          int          `json:"n"`
	Strategies []jsonResult `json:"strategies"`
}

func TestRun_eachStrategyIsOKTenTimesInTen(t *testing.T) {
	for _, s := range strategies {
		t.Run(s.name, func(t *testing.T) {
			t.Parallel()
			for i := range 10 {
				// A long -wait: this test is about the balance, not speed.
				code, stdout, stderr := runStep(t, "-strategy", s.name, "-wait", "60s")
				want := fmt.Sprintf("%-12s %s", s.name+":", "accepted=10 balance=0 expected=0 OK")
				if code != 0 || !strings.Contains(stdout, want+"\n") || stderr != "" {
					t.Fatalf("run %d: exit %d, want 0 and %q\nstdout:\n%s\nstderr:\n%s", i+1, code, want, stdout, stderr)
				}
			}
		})
	}
}

func TestRun_printsOneCheckLineAndOneTableRowPerStrategy(t *testing.T) {
	code, stdout, stderr := runStep(t, "-n", "10")
	if code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", code, stderr)
	}
	for _, s := range strategies {
		if n := strings.Count(stdout, "\n"+s.name+" "); n != 1 {
			t.Errorf("%d table rows for %s, want 1\n%s", n, s.name, stdout)
		}
		checks := 0
		for line := range strings.Lines(stdout) {
			if strings.HasPrefix(line, s.name+":") && strings.HasSuffix(line, " OK\n") {
				checks++
			}
		}
		if checks != 1 {
			t.Errorf("%d OK check lines for %s, want 1\n%s", checks, s.name, stdout)
		}
	}
	if !strings.Contains(stdout, "server-wide") {
		t.Errorf("the output should warn that command counts are server-wide\n%s", stdout)
	}
}

func TestRun_jsonParses(t *testing.T) {
	code, out := runJSON(t, "-n", "20")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	if out.N != 20 || len(out.Strategies) != len(strategies) {
		t.Fatalf("got n=%d and %d strategies, want 20 and %d", out.N, len(out.Strategies), len(strategies))
	}
	for i, r := range out.Strategies {
		if r.Strategy != strategies[i].name || !r.OK || r.Accepted != 10 || !strings.HasSuffix(r.Check, " OK") {
			t.Errorf("strategy %d: %+v, want %s OK with 10 accepted", i, r, strategies[i].name)
		}
		if r.AttemptsPerSpend == nil || r.CommandsPerSpend == nil || r.WaitP99MS < r.WaitP50MS {
			t.Errorf("%s: per-spend numbers missing or p99 < p50: %+v", r.Strategy, r)
		}
	}
}

func TestRun_attemptsAreCounted(t *testing.T) {
	tests := []struct {
		name       string
		n          string
		atLeast    int // attempts, all spenders together
		exactlyOne bool
	}{
		// Alone, a spender takes the lock at the first attempt.
		{"no contention: exactly one", "1", 1, true},
		// Fifty spenders cannot all win their first attempt.
		{"contention: more than one each", "50", 51, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, s := range strategies {
				code, out := runJSON(t, "-strategy", s.name, "-n", tt.n, "-wait", "60s")
				if code != 0 || len(out.Strategies) != 1 {
					t.Fatalf("%s: exit %d, %d results", s.name, code, len(out.Strategies))
				}
				got := out.Strategies[0].Attempts
				if got < tt.atLeast || (tt.exactlyOne && got != 1) {
					t.Errorf("%s: %d attempts, want at least %d (exactly one: %v)", s.name, got, tt.atLeast, tt.exactlyOne)
				}
			}
		})
	}
}

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown strategy", Args: []string{"-strategy", "random"}, Want: `unknown -strategy "random"`},
		{Name: "no spenders", Args: []string{"-n", "0"}, Want: "-n"},
		{Name: "no wait", Args: []string{"-wait", "0"}, Want: "-wait"},
		{Name: "negative work", Args: []string{"-work", "-1ms"}, Want: "-work"},
		{Name: "not a duration", Args: []string{"-ttl", "soon"}, Want: "-ttl"},
		// redislock takes a zero TTL; the program refuses one before running.
		{Name: "zero TTL", Args: []string{"-ttl", "0"}, Want: lock.ErrBadTTL.Error()},
		{Name: "negative TTL", Args: []string{"-ttl", "-1s"}, Want: lock.ErrBadTTL.Error()},
		{Name: "TTL under a millisecond", Args: []string{"-ttl", "999us"}, Want: lock.ErrBadTTL.Error()},
		{Name: "unknown flag", Args: []string{"-no-such-flag"}, Want: "-no-such-flag"},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: "-prefix must not be empty: every key this program writes needs one"},
		{Name: "too many spenders", Args: []string{"-n", "1001"}, Want: "-n must be between 1 and 1000"},
		{Name: "spenders past int64 arithmetic", Args: []string{"-n", "9223372036854775807"}, Want: "-n must be between 1 and 1000"},
		{Name: "work too long", Args: []string{"-work", "1000000h"}, Want: "-work must be between 0 and 1m0s"},
		{Name: "TTL too long", Args: []string{"-ttl", "2m"}, Want: "-ttl must be at most 1m0s"},
		{Name: "wait too long", Args: []string{"-wait", "11m"}, Want: "-wait must be above 0 and at most 10m0s"},
		{Name: "an argument", Args: []string{"extra"}, Want: `unexpected argument "extra"`},
	})
}

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

func TestRun_redisUnreachable(t *testing.T) { testenv.RedisUnreachable(t, run) }

func TestRun_shortWaitReportsErrorsPerStrategy(t *testing.T) {
	// A 1 ms wait: the first spender gets the lock, those that have to
	// retry give up. The balance must still add up.
	code, stdout, stderr := runStep(t, "-strategy", "lockstep", "-wait", "1ms")
	if strings.Contains(stdout, "BROKEN") {
		t.Fatalf("BROKEN with a short wait:\n%s", stdout)
	}
	if !strings.Contains(stderr, "lockstep: ") || !strings.Contains(stderr, "gave up waiting") {
		t.Errorf("exit %d; stderr should count the failed waits of lockstep, got:\n%s", code, stderr)
	}
}

func TestStrategies_jitterWaitsStayInRangeAndDiffer(t *testing.T) {
	s, err := pick("jitter")
	if err != nil {
		t.Fatal(err)
	}
	j, ok := s[0].fresh().(lock.Jitter)
	if !ok {
		t.Fatalf("jitter strategy is %T, want lock.Jitter", s[0].fresh())
	}
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := s[0].fresh().NextBackoff() // a fresh strategy per Obtain, as spendAll does
		if d < j.Min || d > j.Max {
			t.Fatalf("wait %v outside [%v, %v]", d, j.Min, j.Max)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("1000 waits took only %d values; they should differ", len(seen))
	}
}

func TestStrategies_freshValuesDoNotShareState(t *testing.T) {
	// Why spendAll makes one strategy per Obtain: an ExponentialBackoff
	// counts its own retries, so a shared one would make a newcomer start
	// at the cap.
	s, _ := pick("exponential")
	first := s[0].fresh().NextBackoff()
	shared := s[0].fresh()
	for range 10 {
		shared.NextBackoff()
	}
	if got := shared.NextBackoff(); got <= first {
		t.Fatalf("a used strategy waits %v, a fresh one %v: the test's premise is wrong", got, first)
	}
	if got := s[0].fresh().NextBackoff(); got != first {
		t.Errorf("a fresh strategy waits %v after another was used, want %v", got, first)
	}
}

func TestErrorKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{errors.Join(redislock.ErrNotObtained, context.DeadlineExceeded), "gave up waiting"},
		{fmt.Errorf("lock: obtain k: gave up waiting: %w: %w", redislock.ErrNotObtained, context.DeadlineExceeded), "gave up waiting"},
		{redislock.ErrNotObtained, "retries exhausted"},
		{redislock.ErrLockNotHeld, "lease lost"},
		// What wallet.Spend returns when the watchdog cancelled the work.
		{fmt.Errorf("wallet: spend aborted: %w (%w)", context.Canceled, lock.ErrNotHeld), "lease lost"},
		{context.Canceled, "interrupted"},
		// What spendAll makes of a spend its watchdog cancelled, whatever
		// the refresh's error was: not an interrupt, nor a wait given up.
		{fmt.Errorf("%w: %w", errWatchdog, fmt.Errorf("wallet: spend aborted before the write: %w (%w)", context.Canceled, lock.ErrNotHeld)), "cancelled by the watchdog (lease lost)"},
		{fmt.Errorf("%w: wallet: read k: %w", errWatchdog, context.Canceled), "cancelled by the watchdog (lease lost)"},
		{fmt.Errorf("%w: %w", errWatchdog, fmt.Errorf("wallet: spend aborted before the write: %w (lock: refresh took longer than 666ms, a third of the TTL: %w)", context.Canceled, context.DeadlineExceeded)), "cancelled by the watchdog (lease lost)"},
		// A write sent without a reply: unknown, whatever cut it short.
		{fmt.Errorf("wallet: write k: %w: %w", wallet.ErrUnknownOutcome, context.Canceled), "unknown outcome"},
		{errors.New("READONLY You can't write against a read only replica"), "redis error"},
	}
	for _, tt := range tests {
		if got := errorKind(tt.err); got != tt.want {
			t.Errorf("errorKind(%q) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestResult_percentile(t *testing.T) {
	var r result
	for i := 50; i >= 1; i-- { // unsorted on purpose
		r.waits = append(r.waits, time.Duration(i)*time.Millisecond)
	}
	if got := r.percentile(0.50); got != 25*time.Millisecond {
		t.Errorf("p50 = %v, want 25ms", got)
	}
	if got := r.percentile(0.99); got != 50*time.Millisecond {
		t.Errorf("p99 = %v, want 50ms", got)
	}
	if got := (result{}).percentile(0.5); got != 0 {
		t.Errorf("p50 of nothing = %v, want 0", got)
	}
}

// Every report is one line, even for an error whose message spans two
// (redislock joins errors with a newline).
func TestReportErrors_oneLine(t *testing.T) {
	var stderr bytes.Buffer
	r := result{Strategy: "jitter", errs: []error{
		fmt.Errorf("lock: release k: %w", errors.Join(redislock.ErrLockNotHeld, context.DeadlineExceeded)),
	}}
	reportErrors(&stderr, r)
	if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "lock: release k: redislock: lock not held context deadline exceeded") {
		t.Errorf("stderr = %q, want one line with the whole error", got)
	}
}

// A second run on a prefix that a run is using is refused at once, in one
// line that names the prefix and what to do; the first run is unharmed.
func TestRun_secondRunOnAPrefixIsRefused(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	args := []string{"-strategy", "lockstep", "-n", "20", "-work", "20ms", "-wait", "60s", "-prefix", prefix}
	var stdout, stderr bytes.Buffer
	first := make(chan int, 1)
	go func() { first <- run(t.Context(), args, &stdout, &stderr) }()
	waitForSpends(t, rdb, prefix)

	var out2, err2 bytes.Buffer
	if code := run(t.Context(), args, &out2, &err2); code != 1 {
		t.Errorf("second run: exit %d, want 1", code)
	}
	msg := err2.String()
	if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "in use by another run") || !strings.Contains(msg, prefix) || !strings.Contains(msg, "-prefix") || out2.Len() > 0 {
		t.Errorf("second run: stdout %q, stderr %q; want nothing, and one line naming the prefix and -prefix", out2.String(), msg)
	}
	if code := <-first; code != 0 || !strings.Contains(stdout.String(), "lockstep:    accepted=10 balance=0 expected=0 OK") {
		t.Errorf("first run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
}

// waitForSpends returns once the run on prefix has spent from its wallet.
func waitForSpends(t *testing.T, rdb *redis.Client, prefix string) {
	t.Helper()
	key := wallet.BalanceKey(prefix, wallet.DemoWallet)
	deadline := time.Now().Add(time.Minute)
	for {
		if b, err := rdb.Get(t.Context(), key).Int64(); err == nil && b < initial {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no spend from %s within a minute", key)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// interrupt runs the program, cancels its context (Ctrl-C) once spends
// have begun and after freeze (if any) ran, and returns the exit code,
// the output, and how long run took to return after the cancel.
func interrupt(t *testing.T, rdb *redis.Client, freeze func(), args ...string) (int, string, string, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, args, &stdout, &stderr) }()
	waitForSpends(t, rdb, args[len(args)-1])
	if freeze != nil {
		freeze()
	}
	cancel()
	start := time.Now()
	select {
	case code := <-done:
		return code, stdout.String(), stderr.String(), time.Since(start)
	case <-time.After(30 * time.Second):
		t.Fatalf("run did not return within 30s of the interrupt")
	}
	return 0, "", "", 0
}

// Ctrl-C stops the spenders, prints what they did and deletes the keys:
// exit 130, no "context canceled" from the read-back.
func TestRun_interruptPrintsWhatRanAndCleansUp(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	code, stdout, stderr, took := interrupt(t, rdb, nil, "-strategy", "lockstep", "-n", "20", "-work", "50ms", "-wait", "60s", "-prefix", prefix)
	if code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	if took > cli.CleanupTimeout {
		t.Errorf("run took %v to return after Ctrl-C, want at most %v", took, cli.CleanupTimeout)
	}
	if !strings.HasPrefix(stdout, "lockstep:    accepted=") || !strings.Contains(stdout, " OK\n") || !strings.Contains(stdout, "\nlockstep     LinearBackoff") {
		t.Errorf("stdout should hold the check line and the row of what ran:\n%s", stdout)
	}
	if !strings.Contains(stderr, "interrupted: the lockstep row counts only the spends that ended before Ctrl-C") || strings.Contains(stderr, "commandstats") || strings.Contains(stderr, "could not delete") {
		t.Errorf("stderr:\n%s", stderr)
	}
	keys := []string{wallet.BalanceKey(prefix, wallet.DemoWallet), wallet.LockKey(prefix, wallet.DemoWallet), runlease.Key(prefix)}
	if n := rdb.Exists(context.Background(), keys...).Val(); n != 0 {
		t.Errorf("%d of the run's keys are left after Ctrl-C", n)
	}
}

// Ctrl-C with Redis frozen (SIGSTOP): the run still returns within the
// clean-up time, exits 130, and names the keys it could not delete in one
// line whose command deletes them once Redis is back.
func TestRun_interruptWithRedisFrozen(t *testing.T) {
	srv := testenv.OwnRedis(t)
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", srv.Addr)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { rdb.Close() })
	const prefix = "walletlock:test:frozen:"
	code, stdout, stderr, took := interrupt(t, rdb, srv.Freeze, "-strategy", "jitter", "-n", "20", "-work", "50ms", "-wait", "60s", "-prefix", prefix)
	srv.Thaw()
	t.Logf("returned %v after Ctrl-C", took)
	if code != 130 {
		t.Errorf("exit %d, want 130", code)
	}
	// The bound is the program's; the margin is for a busy machine.
	if limit := cli.CleanupTimeout + 2*time.Second; took > limit {
		t.Errorf("run took %v to return after Ctrl-C with Redis frozen, want at most %v", took, limit)
	}
	if strings.Contains(stdout, "BROKEN") {
		t.Errorf("stdout:\n%s", stdout)
	}
	var left []string
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "could not delete") {
			left = append(left, line)
		}
	}
	_, port, _ := strings.Cut(srv.Addr, ":")
	want := "redis-cli -h 127.0.0.1 -p " + port + " del 'walletlock:test:frozen:balance:{wallet:42}' 'walletlock:test:frozen:lock:{wallet:42}'\n"
	if len(left) != 1 || !strings.HasSuffix(left[0], want) || !strings.Contains(stderr, "interrupted during jitter") {
		t.Fatalf("stderr should say it was interrupted and end the line of what is left with %q:\n%s", want, stderr)
	}
	if _, err := exec.LookPath("redis-cli"); err != nil {
		t.Skip("no redis-cli to run the command with")
	}
	_, command, _ := strings.Cut(left[0], "remove them with: ")
	if out, err := exec.Command("sh", "-c", command).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	if n := rdb.Exists(context.Background(), wallet.BalanceKey(prefix, wallet.DemoWallet), wallet.LockKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
		t.Errorf("%d keys are left after running the command", n)
	}
}

// A REDIS_URL whose password holds an unescaped @ never shows any part of
// it. The program adds nothing of its own about the URL: its one line is
// package wallet's description, which wallet keeps free of user-info.
func TestRun_redisURLPasswordNeverShown(t *testing.T) {
	const password = "s3cr@tPzq9"
	t.Setenv("REDIS_URL", "redis://walletlock:"+password+"@127.0.0.1:1/0")
	_, werr := wallet.Connect(t.Context())
	if werr == nil {
		t.Fatal("Connect reached a server at 127.0.0.1:1")
	}
	msg := testenv.FailsInOneLine(t, run, nil)
	if want := "step4-redislock: " + oneLine(werr) + "\n"; msg != want {
		t.Errorf("stderr = %q, want wallet's description alone: %q", msg, want)
	}
	testenv.NoSecretBeyond(t, msg, oneLine(werr), password)
}

// Spends whose write got no reply are counted apart: the check line gives
// the range they allow, and a second line how many of them landed.
func TestPrintCheck_unknownOutcomes(t *testing.T) {
	var out bytes.Buffer
	printCheck(&out, result{Strategy: "jitter", Verdict: wallet.CheckUnknown(initial, amount, 7, 2, 20)})
	want := "jitter:      accepted=7 unknown=2 balance=20 expected=10..30 OK\n" +
		"             1 of the 2 spends with an unknown outcome landed\n"
	if out.String() != want {
		t.Errorf("got:\n%swant:\n%s", out.String(), want)
	}
}
