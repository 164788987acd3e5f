package main

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/testenv"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

// runStep runs the program on a key prefix of its own and checks that it
// left no key behind.
func runStep(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	var out, errOut bytes.Buffer
	code = run(t.Context(), append([]string{"-prefix", prefix}, args...), &out, &errOut)
	if n := rdb.Exists(t.Context(), wallet.BalanceKey(prefix, wallet.DemoWallet), wallet.LockKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
		t.Errorf("run(%q) left %d keys behind", args, n)
	}
	return code, out.String(), errOut.String()
}

// A phase prints three lines: a header naming it and its settings, then
// (indented) what happened and the check line, which ends with the
// history's verdict.
var phaseLines = regexp.MustCompile(`^phase (\d): (.+)\n  (.+)\n  (accepted=\d+ balance=-?\d+ expected=-?\d+ (?:OK|BROKEN)) linearizable=(yes|no|unknown)\n$`)

// Each phase must give its verdict on every run with the defaults, and
// -phase all must run the three in order. The runs go side by side, each on
// keys of its own, to keep the test short (phase 2 alone takes three times
// the work): t.Run from several goroutines, since t.Parallel would queue
// them behind -parallel, which is 2 on a 2-core machine. Run the package
// with -count=10 to see ten runs of each.
func TestRun_defaultsGiveTheLessonsVerdicts(t *testing.T) {
	tests := []struct {
		phase, check, story string
	}{
		{"1", "", "3 of 3 releases found the lease gone and deleted nothing"},
		{"2", "accepted=3 balance=70 expected=70 OK", "0 of 3 releases found the lease gone and deleted nothing"},
		{"3", "accepted=0 balance=100 expected=100 OK", "the watchdog cancelled the spend before its write, cause: " + lock.ErrNotHeld.Error()},
	}
	var wg sync.WaitGroup
	for _, tt := range tests {
		wg.Go(func() {
			t.Run("phase "+tt.phase, func(t *testing.T) {
				code, stdout, stderr := runStep(t, "-phase", tt.phase)
				if code != 0 || stderr != "" {
					t.Fatalf("run = %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
				}
				m := phaseLines.FindStringSubmatch(stdout)
				if m == nil || m[1] != tt.phase {
					t.Fatalf("stdout is not phase %s's three lines:\n%s", tt.phase, stdout)
				}
				story, check := m[3], m[4]
				if want, _ := lesson.WantHistory(step, tt.phase); m[5] != want {
					t.Errorf("linearizable=%s, the lesson says %s", m[5], want)
				}
				if want := lesson.Want(step, tt.phase); !strings.HasSuffix(check, " "+want) {
					t.Errorf("check line %q, want %s", check, want)
				}
				if tt.check != "" && check != tt.check {
					t.Errorf("check line %q, want %q", check, tt.check)
				}
				if story != tt.story {
					t.Errorf("story line %q, want %q", story, tt.story)
				}
				if tt.phase == "1" && !strings.HasPrefix(check, "accepted=3 ") {
					// All three had money to spend: every one was accepted,
					// and the balance shows fewer spends than that.
					t.Errorf("check line %q, want 3 accepted", check)
				}
			})
		})
	}
	wg.Go(func() { t.Run("all phases, json", allPhasesJSON) })
	wg.Wait()
}

// allPhasesJSON runs the three phases in order, each on a fresh balance.
// Two spenders are enough for phase 1 to lose an update, and keep it short.
func allPhasesJSON(t *testing.T) {
	code, stdout, stderr := runStep(t, "-json", "-n", "2")
	if code != 0 || stderr != "" {
		t.Fatalf("run = %d, want 0; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var got struct {
		Redis  string `json:"redis_version"`
		Phases []struct {
			lesson.Result
			NotHeld  int    `json:"releases_not_held"`
			Releases int    `json:"releases"`
			Cause    string `json:"cause"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if got.Redis == "" || len(got.Phases) != 3 {
		t.Fatalf("got %+v, want a Redis version and three phases", got)
	}
	for i, p := range got.Phases {
		if want := []string{"1", "2", "3"}[i]; p.Phase != want || p.Step != step || !p.Match() {
			t.Errorf("phase %d: %+v, want phase %s giving %s", i+1, p.Result, want, lesson.Want(step, want))
		}
	}
	p1, p2, p3 := got.Phases[0], got.Phases[1], got.Phases[2]
	if p1.NotHeld != 2 || p1.Releases != 2 || p2.NotHeld != 0 || p2.Releases != 2 {
		t.Errorf("releases that found the lease gone: phase 1 %d of %d (want 2 of 2), phase 2 %d of %d (want 0 of 2)",
			p1.NotHeld, p1.Releases, p2.NotHeld, p2.Releases)
	}
	if p1.Check != "accepted=2 balance=90 expected=80 BROKEN" {
		t.Errorf("phase 1 check %q: two spenders both read 100, so one spend is lost", p1.Check)
	}
	if p3.Check != "accepted=0 balance=100 expected=100 OK" || p3.Cause != lock.ErrNotHeld.Error() || p3.NotHeld != 1 {
		t.Errorf("phase 3: %+v, want nothing written, cause ErrNotHeld, the release refused", p3)
	}
}

// When the settings cannot show what a phase is about, the program must
// say so and exit 1, not print a verdict that contradicts the lesson and
// exit 0. Here the work fits in the TTL, so phase 1 loses nothing.
func TestRun_saysWhenAPhaseMissesItsVerdict(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runStep(t, "-phase", "1", "-n", "2", "-ttl", "5s", "-work", "50ms")
	if code != 1 {
		t.Errorf("run = %d, want 1", code)
	}
	if !strings.Contains(stdout, "accepted=2 balance=80 expected=80 OK") {
		t.Errorf("stdout:\n%s\nwant phase 1 OK: the work fits in the TTL", stdout)
	}
	if !strings.Contains(stderr, "phase 1 gave OK, the lesson says BROKEN") {
		t.Errorf("stderr = %q, want it to say phase 1 missed its verdict", stderr)
	}
}

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "unknown phase", Args: []string{"-phase", "4"}, Want: `-phase "4"`},
		{Name: "zero TTL", Args: []string{"-ttl", "0"}, Want: "-ttl: lock: TTL must be at least 1ms"},
		{Name: "TTL under a millisecond", Args: []string{"-ttl", "500us"}, Want: "lock: TTL must be at least 1ms, got 500µs"},
		{Name: "not a duration", Args: []string{"-work", "long"}, Want: "-work"},
		{Name: "no spenders", Args: []string{"-n", "0"}, Want: "-n"},
		{Name: "negative work", Args: []string{"-work", "-1ms"}, Want: "-work"},
		{Name: "an argument", Args: []string{"extra"}, Want: `unexpected argument "extra"`},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: harness.ErrEmptyPrefix.Error()},
		// -n 200000 took 2.2 GB.
		{Name: "too many spenders", Args: []string{"-n", "200000"}, Want: "-n must be at most 10000, got 200000"},
		// n x (work + ttl) overflowed a time.Duration, and phase 1 said OK.
		{Name: "work beyond the bound", Args: []string{"-work", "1000000h"}, Want: "-work must be at most 1h"},
		{Name: "TTL beyond the bound", Args: []string{"-ttl", "1000000h"}, Want: "-ttl must be at most 1h"},
	})
}

// Two runs under one prefix would take each other's lock and balance: the
// second is refused, and the first is not disturbed.
func TestRun_secondRunOnThePrefixIsRefused(t *testing.T) {
	t.Parallel()
	testenv.SecondRunRefused(t, run, "-phase", "1", "-n", "2")
}

// Ctrl-C stops the phase, prints what it measured, deletes the keys and
// exits 130; with Redis frozen it still returns within the clean-up bound
// and names the keys it could not delete; at the bound of -n it answers as
// promptly.
func TestRun_ctrlC(t *testing.T) {
	balance := wallet.BalanceKey("", wallet.DemoWallet)
	t.Run("mid-phase", func(t *testing.T) {
		stdout, stderr := testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-phase", "2"}, Key: balance, After: time.Second})
		want := regexp.MustCompile(`^phase 2: .+\n  interrupted by Ctrl-C: the check counts only the spends made before it\n  accepted=\d+ balance=\d+ expected=\d+ OK linearizable=unknown\n$`)
		if !want.MatchString(stdout) {
			t.Errorf("stdout = %q, want phase 2's header, that it was interrupted, and its check line", stdout)
		}
		if !strings.HasSuffix(stderr, "interrupted by Ctrl-C during phase 2\n") {
			t.Errorf("stderr = %q, want it to name phase 2", stderr)
		}
	})
	t.Run("Redis frozen", func(t *testing.T) {
		testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-phase", "2"}, Key: balance, After: time.Second, Frozen: true})
	})
	t.Run("at the bound of -n", func(t *testing.T) {
		testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-phase", "1", "-n", "10000"}, Key: balance, After: time.Second, Swamped: true})
	})
	t.Run("json", func(t *testing.T) {
		stdout, _ := testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-json"}, Key: balance, After: 4 * time.Second})
		var got struct {
			Interrupted bool            `json:"interrupted"`
			Phases      []lesson.Result `json:"phases"`
			CutShort    *lesson.Result  `json:"interrupted_phase"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		// Phase 1 takes about 2.4 s, phase 2 about 3.6 s.
		if !got.Interrupted || len(got.Phases) != 1 || !got.Phases[0].Match() || got.CutShort == nil || got.CutShort.Phase != "2" {
			t.Errorf("got %+v, want interrupted, phase 1 as the lesson says, and phase 2 as interrupted_phase", got)
		}
	})
}

func TestRun_redisUnreachable(t *testing.T) { testenv.RedisUnreachable(t, run) }

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

// -json keeps every key a run printed before the shared report
// (internal/harness): testdata/json-contract.json.
func TestRun_jsonKeepsEveryKey(t *testing.T) { testenv.JSONKeepsKeys(t, run) }
