package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/redislockx"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/internal/testenv"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
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
	N          int                  `json:"n"`
	Strategies []redislockx.Figures `json:"strategies"`
}

func TestRun_eachStrategyIsOKTenTimesInTen(t *testing.T) {
	for _, s := range strategies {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			for i := range 10 {
				// A long -wait: this test is about the balance, not speed.
				code, stdout, stderr := runStep(t, "-strategy", s.Name, "-wait", "60s")
				want := fmt.Sprintf("%-12s %s", s.Name+":", "accepted=10 balance=0 expected=0 OK linearizable=yes")
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
		if n := strings.Count(stdout, "\n"+s.Name+" "); n != 1 {
			t.Errorf("%d table rows for %s, want 1\n%s", n, s.Name, stdout)
		}
		checks := 0
		for line := range strings.Lines(stdout) {
			if strings.HasPrefix(line, s.Name+":") && strings.HasSuffix(line, " OK linearizable=yes\n") {
				checks++
			}
		}
		if checks != 1 {
			t.Errorf("%d OK check lines for %s, want 1\n%s", checks, s.Name, stdout)
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
		if r.Strategy != strategies[i].Name || !r.OK || r.Accepted != 10 || !strings.HasSuffix(r.Check, " OK") {
			t.Errorf("strategy %d: %+v, want %s OK with 10 accepted", i, r, strategies[i].Name)
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
				code, out := runJSON(t, "-strategy", s.Name, "-n", tt.n, "-wait", "60s")
				if code != 0 || len(out.Strategies) != 1 {
					t.Fatalf("%s: exit %d, %d results", s.Name, code, len(out.Strategies))
				}
				got := out.Strategies[0].Attempts
				if got < tt.atLeast || (tt.exactlyOne && got != 1) {
					t.Errorf("%s: %d attempts, want at least %d (exactly one: %v)", s.Name, got, tt.atLeast, tt.exactlyOne)
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
		{Name: "zero TTL", Args: []string{"-ttl", "0"}, Want: "lock: TTL must be at least 1ms"},
		{Name: "negative TTL", Args: []string{"-ttl", "-1s"}, Want: "lock: TTL must be at least 1ms"},
		{Name: "TTL under a millisecond", Args: []string{"-ttl", "999us"}, Want: "lock: TTL must be at least 1ms"},
		{Name: "unknown flag", Args: []string{"-no-such-flag"}, Want: "-no-such-flag"},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: "-prefix must not be empty: every key this program writes needs one"},
		{Name: "too many spenders", Args: []string{"-n", "10001"}, Want: "-n must be at most 10000"},
		{Name: "spenders past int64 arithmetic", Args: []string{"-n", "9223372036854775807"}, Want: "-n must be at most 10000"},
		{Name: "work too long", Args: []string{"-work", "1000000h"}, Want: "-work must be at most 1h"},
		{Name: "TTL too long", Args: []string{"-ttl", "2h"}, Want: "-ttl must be at most 1h"},
		{Name: "wait too long", Args: []string{"-wait", "2h"}, Want: "-wait must be at most 1h"},
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
	if code != 1 || !strings.Contains(stderr, "lockstep: ") || !strings.Contains(stderr, "gave up waiting") {
		t.Errorf("exit %d, want 1; stderr should count the failed waits of lockstep, got:\n%s", code, stderr)
	}
}

func TestStrategies_jitterWaitsStayInRangeAndDiffer(t *testing.T) {
	s, err := pick("jitter")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s[0].Fresh().(lock.Jitter); !ok {
		t.Fatalf("jitter strategy is %T, want lock.Jitter", s[0].Fresh())
	}
	// What the strategy's label promises: lock.Jitter{5ms, 15ms}.
	const lo, hi = 5 * time.Millisecond, 15 * time.Millisecond
	seen := map[time.Duration]bool{}
	for range 1000 {
		d := s[0].Fresh().NextBackoff() // a fresh strategy per Obtain, as spend does
		if d < lo || d > hi {
			t.Fatalf("wait %v outside [%v, %v]", d, lo, hi)
		}
		seen[d] = true
	}
	if len(seen) < 10 {
		t.Errorf("1000 waits took only %d values; they should differ", len(seen))
	}
}

func TestStrategies_freshValuesDoNotShareState(t *testing.T) {
	// Why spend makes one strategy per Obtain: an ExponentialBackoff
	// counts its own retries, so a shared one would make a newcomer start
	// at the cap.
	s, _ := pick("exponential")
	first := s[0].Fresh().NextBackoff()
	shared := s[0].Fresh()
	for range 10 {
		shared.NextBackoff()
	}
	if got := shared.NextBackoff(); got <= first {
		t.Fatalf("a used strategy waits %v, a fresh one %v: the test's premise is wrong", got, first)
	}
	if got := s[0].Fresh().NextBackoff(); got != first {
		t.Errorf("a fresh strategy waits %v after another was used, want %v", got, first)
	}
}

// A second run on a prefix that a run is using is refused at once, in one
// line that names the prefix and what to do; the first run is unharmed.
func TestRun_secondRunOnThePrefixIsRefused(t *testing.T) {
	testenv.SecondRunRefused(t, run, "-strategy", "lockstep", "-n", "20", "-work", "50ms", "-wait", "60s")
}

// Ctrl-C stops the spenders, prints what they did (the strategy it cut
// short marked as such, and kept out of the lesson's phases), deletes the
// keys and exits 130; with Redis frozen it still returns within the
// clean-up time and names the keys it could not delete.
func TestRun_ctrlC(t *testing.T) {
	balance := wallet.BalanceKey("", wallet.DemoWallet)
	args := []string{"-strategy", "lockstep", "-n", "20", "-work", "50ms", "-wait", "60s"}
	t.Run("mid-run", func(t *testing.T) {
		stdout, stderr := testenv.Interrupt(t, run, testenv.CtrlC{Args: args, Key: balance, After: 100 * time.Millisecond})
		if !strings.HasPrefix(stdout, "lockstep:    accepted=") || !strings.Contains(stdout, " OK linearizable=unknown\n") || !strings.Contains(stdout, "\nlockstep     LinearBackoff") {
			t.Errorf("stdout should hold the check line and the row of what ran:\n%s", stdout)
		}
		if !strings.Contains(stderr, "interrupted by Ctrl-C during lockstep: its row counts only the spends made before it") || strings.Contains(stderr, "commandstats") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("Redis frozen", func(t *testing.T) {
		_, stderr := testenv.Interrupt(t, run, testenv.CtrlC{Args: args, Key: balance, After: 100 * time.Millisecond, Frozen: true})
		if !strings.Contains(stderr, "interrupted by Ctrl-C during lockstep") {
			t.Errorf("stderr:\n%s", stderr)
		}
	})
	t.Run("at the bound of -n", func(t *testing.T) {
		testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-strategy", "jitter", "-n", "10000", "-work", "10ms"}, Key: balance, After: 300 * time.Millisecond, Swamped: true})
	})
	t.Run("json", func(t *testing.T) {
		stdout, _ := testenv.Interrupt(t, run, testenv.CtrlC{Args: append([]string{"-json"}, args...), Key: balance, After: 100 * time.Millisecond})
		var got struct {
			Interrupted bool                 `json:"interrupted"`
			Strategies  []redislockx.Figures `json:"strategies"`
			Phases      []lesson.Result      `json:"phases"`
			CutShort    *lesson.Result       `json:"interrupted_phase"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if !got.Interrupted || len(got.Phases) != 0 || got.CutShort == nil || got.CutShort.Verdict != "OK" || len(got.Strategies) != 1 || !got.Strategies[0].Cut {
			t.Errorf("got %+v, want interrupted, the strategy marked so, no phase for the lesson, and interrupted_phase OK", got)
		}
	})
}

// A REDIS_URL whose password holds an unescaped @ never shows any part of
// it. The program adds nothing of its own about the URL: its one line is
// package wallet's description, which wallet keeps free of user-info.
func TestRun_redisURLPasswordNeverShown(t *testing.T) {
	const password = "s3cr@tPzq9"
	t.Setenv("REDIS_URL", "redis://walletlock:"+password+"@127.0.0.1:1/0")
	_, werr := services.Connect(t.Context())
	if werr == nil {
		t.Fatal("Connect reached a server at 127.0.0.1:1")
	}
	msg := testenv.FailsInOneLine(t, run, nil)
	if want := "step4-redislock: " + harness.OneLine(werr) + "\n"; msg != want {
		t.Errorf("stderr = %q, want wallet's description alone: %q", msg, want)
	}
	testenv.NoSecretBeyond(t, msg, harness.OneLine(werr), password)
}

// -json keeps every key a run printed before the shared report
// (internal/harness): testdata/json-contract.json.
func TestRun_jsonKeepsEveryKey(t *testing.T) { testenv.JSONKeepsKeys(t, run) }

// What the tutorial may say about the strategies, because it held in 129 of
// 130 runs on a busy 2-core machine (alone, two at once, load average up
// to 17; the other run had one burst stalled for a second by another
// program starving the shared Redis): jitter makes fewer lock attempts
// than lockstep and than exponential, and exponential takes more wall
// time than lockstep (1.9 times as much or more: a wide margin). Which of
// lockstep and exponential makes more attempts changes from run to run,
// and so do the ratios: the test holds the order alone.
//
// It runs the program built without -race, as a reader runs it: the race
// detector slows every spender several-fold, which changes how they
// collide (under -race these orderings failed in 4 of 10 runs). And it runs
// it on a redis-server of its own: on the shared one, other programs'
// commands queue with the spenders' and can stall one burst alone.
func TestRun_strategiesKeepTheirOrder(t *testing.T) {
	rdb := testenv.StartRedis(t).Use(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	bin := filepath.Join(t.TempDir(), "step4-redislock")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, "-json", "-prefix", testenv.Prefix(t, rdb))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, stderr.String())
	}
	var out jsonOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || len(out.Strategies) != 3 {
		t.Fatalf("-json output: %v, %d strategies, want 3:\n%s", err, len(out.Strategies), stdout.String())
	}
	got := map[string]redislockx.Figures{}
	for _, s := range out.Strategies {
		got[s.Strategy] = s
		t.Logf("%-11s wall %8.2fms attempts %4d wait p99 %8.2fms", s.Strategy, s.WallMS, s.Attempts, s.WaitP99MS)
	}
	lockstep, exponential, jitter := got["lockstep"], got["exponential"], got["jitter"]
	if jitter.Attempts >= lockstep.Attempts {
		t.Errorf("jitter made %d attempts, lockstep %d: want jitter fewer", jitter.Attempts, lockstep.Attempts)
	}
	if jitter.Attempts >= exponential.Attempts {
		t.Errorf("jitter made %d attempts, exponential %d: want jitter fewer", jitter.Attempts, exponential.Attempts)
	}
	if exponential.WallMS <= lockstep.WallMS {
		t.Errorf("exponential took %.1fms, lockstep %.1fms: want exponential longer", exponential.WallMS, lockstep.WallMS)
	}
}
