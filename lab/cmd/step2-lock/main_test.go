package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/internal/testenv"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

// With -procs the program starts copies of its own binary as spenders;
// under go test that binary is this test binary, which must then be a
// spender and nothing else.
func TestMain(m *testing.M) {
	if harness.Child() {
		harness.Main(run)
	}
	os.Exit(m.Run())
}

// runStep runs the program and returns its exit code and output.
func runStep(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(t.Context(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// With the lock, ten spends get through and the balance ends at zero on
// every run, whichever way the lock is released, and no lock is left.
func TestRun_okEveryRun(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	version, err := services.RedisVersion(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	hasDelex, err := lock.HasDelex(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		method := []string{"auto", "lua"}[i%2]
		used := "lua"
		if method == "auto" && hasDelex {
			used = "delex"
		}
		code, stdout, stderr := runStep(t, "-prefix", prefix, "-release", method)
		if code != 0 || stderr != "" {
			t.Fatalf("run %d (-release %s) = %d, want 0; stderr:\n%s", i+1, method, code, stderr)
		}
		want := "accepted=10 balance=0 expected=0 OK linearizable=yes\n" +
			fmt.Sprintf("lock key left behind: no (released with %s, Redis %s)\n", used, version)
		if stdout != want {
			t.Fatalf("run %d (-release %s) printed:\n%s\nwant:\n%s", i+1, method, stdout, want)
		}
		// The program deletes its balance key too.
		key := wallet.BalanceKey(prefix, wallet.DemoWallet)
		if n := rdb.Exists(t.Context(), key, wallet.LockKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
			t.Fatalf("run %d left %d keys behind", i+1, n)
		}
	}
}

// The spenders as four processes instead of fifty goroutines of one: the
// lock lives in Redis, so it queues them across processes as it did
// within one, and the lines are the same. JSON says how many processes ran.
func TestRun_procsOK(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	version, err := services.RedisVersion(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runStep(t, "-prefix", prefix, "-procs", "4", "-release", "lua")
	want := "accepted=10 balance=0 expected=0 OK linearizable=yes\n" +
		fmt.Sprintf("lock key left behind: no (released with lua, Redis %s)\n", version)
	if code != 0 || stderr != "" || stdout != want {
		t.Fatalf("run = %d, want 0; stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
	code, stdout, stderr = runStep(t, "-prefix", prefix, "-procs", "4", "-json")
	var got struct {
		Procs          int `json:"procs"`
		FailedReleases int `json:"failed_releases"`
		Phases         []struct {
			lesson.Result
			Linearizable string `json:"linearizable"`
			HistoryOps   int    `json:"history_ops"`
		} `json:"phases"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("run -json = %d (%v); stdout:\n%s\nstderr:\n%s", code, err, stdout, stderr)
	}
	if got.Procs != 4 || got.FailedReleases != 0 || len(got.Phases) != 1 || got.Phases[0].Check != "accepted=10 balance=0 expected=0 OK" ||
		got.Phases[0].Linearizable != "yes" || got.Phases[0].HistoryOps != 50 {
		t.Errorf("got %+v, want procs 4, no failed release, the OK check line and a linearizable history of the 50 spends, merged from the four processes", got)
	}
	if n := rdb.Exists(t.Context(), wallet.BalanceKey(prefix, wallet.DemoWallet), wallet.LockKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
		t.Fatalf("%d keys left behind", n)
	}
}

// A spender process whose lock expired before it released it reports the
// failed release, as a goroutine would.
func TestRun_procsReportFailedReleases(t *testing.T) {
	rdb := testenv.Redis(t)
	code, stdout, stderr := runStep(t, "-prefix", testenv.Prefix(t, rdb), "-procs", "2", "-n", "2", "-ttl", "50ms", "-work", "200ms", "-json")
	var got struct {
		FailedReleases int `json:"failed_releases"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if code != 1 || got.FailedReleases == 0 || !strings.Contains(stderr, "releases failed, first: lock: not held") {
		t.Errorf("run = %d, failed_releases %d, stderr %q; want 1, some, and a line naming the first", code, got.FailedReleases, stderr)
	}
}

func TestRun_json(t *testing.T) {
	rdb := testenv.Redis(t)
	code, stdout, stderr := runStep(t, "-prefix", testenv.Prefix(t, rdb), "-json", "-n", "20")
	if code != 0 || stderr != "" {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr)
	}
	var got struct {
		Redis          string          `json:"redis_version"`
		Release        string          `json:"release"`
		Procs          int             `json:"procs"`
		LockLeft       bool            `json:"lock_left"`
		FailedSpends   int             `json:"failed_spends"`
		FailedReleases int             `json:"failed_releases"`
		Phases         []lesson.Result `json:"phases"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	want := lesson.Result{Step: step, Phase: "lock", Check: "accepted=10 balance=0 expected=0 OK", Verdict: "OK", Want: "OK"}
	if len(got.Phases) != 1 || got.Phases[0] != want {
		t.Errorf("phases = %+v, want [%+v]", got.Phases, want)
	}
	if got.Redis == "" || got.Release == "" || got.Procs != 1 || got.LockLeft || got.FailedSpends != 0 || got.FailedReleases != 0 {
		t.Errorf("got %+v, want a version, a release method, one process, no lock left, no failures", got)
	}
}

// -release delex asks for a command that only Redis 8.4 and later has: on
// an older server the program must refuse in one line naming the version,
// before it spends anything; on a newer one it must work.
func TestRun_releaseDelex(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	hasDelex, err := lock.HasDelex(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	version, err := services.RedisVersion(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runStep(t, "-prefix", prefix, "-release", "delex")
	if hasDelex {
		if code != 0 || !strings.Contains(stdout, "released with delex") {
			t.Errorf("run = %d, want 0 and a DELEX release; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		return
	}
	if code != 1 {
		t.Errorf("run = %d, want 1", code)
	}
	if stdout != "" {
		t.Errorf("stdout = %q, want nothing", stdout)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "Redis "+version) || !strings.Contains(stderr, "8.4") {
		t.Errorf("stderr = %q, want one line naming Redis %s and 8.4", stderr, version)
	}
	if n := rdb.Exists(t.Context(), wallet.BalanceKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
		t.Error("the program wrote a balance before refusing")
	}
}

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "unknown release method", Args: []string{"-release", "del"}, Want: `-release: unknown release method "del"`},
		{Name: "zero TTL", Args: []string{"-ttl", "0"}, Want: "-ttl: lock: TTL must be at least 1ms"},
		{Name: "negative TTL", Args: []string{"-ttl", "-1s"}, Want: "lock: TTL must be at least 1ms"},
		{Name: "TTL under a millisecond", Args: []string{"-ttl", "500us"}, Want: "lock: TTL must be at least 1ms, got 500µs"},
		{Name: "no spenders", Args: []string{"-n", "0"}, Want: "-n"},
		{Name: "no wait", Args: []string{"-wait", "0"}, Want: "-wait"},
		{Name: "negative work", Args: []string{"-work", "-1ms"}, Want: "-work"},
		{Name: "an argument", Args: []string{"extra"}, Want: `unexpected argument "extra"`},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: harness.ErrEmptyPrefix.Error()},
		{Name: "too many spenders", Args: []string{"-n", "10001"}, Want: "-n must be at most 10000"},
		{Name: "TTL beyond the bound", Args: []string{"-ttl", "2h"}, Want: "-ttl must be at most 1h"},
		{Name: "wait beyond the bound", Args: []string{"-wait", "1000000h"}, Want: "-wait must be at most 1h"},
		{Name: "work beyond the bound", Args: []string{"-work", "2h"}, Want: "-work must be at most 1h"},
		{Name: "no processes", Args: []string{"-procs", "0"}, Want: "-procs must be between 1 and 64"},
		{Name: "too many processes", Args: []string{"-procs", "65"}, Want: "-procs must be between 1 and 64"},
		{Name: "more processes than spenders", Args: []string{"-procs", "21", "-n", "20"}, Want: "at most -n (20), got 21"},
	})
}

// Two runs under one prefix would reset and delete each other's balance
// and lock: the second is refused, and the first is not disturbed.
func TestRun_secondRunOnThePrefixIsRefused(t *testing.T) {
	testenv.SecondRunRefused(t, run, "-work", "100ms")
}

// Ctrl-C stops the spenders, prints what they did, releases the lock,
// deletes the keys and exits 130; with Redis frozen it still returns
// within the clean-up bound and names the keys it could not delete.
func TestRun_ctrlC(t *testing.T) {
	balance := wallet.BalanceKey("", wallet.DemoWallet)
	t.Run("mid-run", func(t *testing.T) {
		stdout, stderr := testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-work", "100ms"}, Key: balance, After: 300 * time.Millisecond})
		if !checkThenLock.MatchString(stdout) {
			t.Errorf("stdout = %q, want the check line and the lock line", stdout)
		}
		if !strings.Contains(stderr, "interrupted by Ctrl-C; the check line counts only the spends made before it") {
			t.Errorf("stderr = %q", stderr)
		}
	})
	t.Run("Redis frozen", func(t *testing.T) {
		testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-work", "100ms"}, Key: balance, After: 300 * time.Millisecond, Frozen: true})
	})
	t.Run("at the bound of -n", func(t *testing.T) {
		testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-n", "10000", "-work", "10ms"}, Key: balance, After: 300 * time.Millisecond, Swamped: true})
	})
	// The spender processes hear the interrupt through the program: they
	// stop and send their tallies, none is killed (its spends would show
	// as unknown outcomes), no one else is signalled, and the lock that
	// one of them held is deleted.
	t.Run("-procs 4, holding the lock", func(t *testing.T) {
		stdout, _ := testenv.InterruptProcs(t, run, testenv.CtrlC{Args: []string{"-procs", "4", "-work", "10s"},
			Key: wallet.LockKey("", wallet.DemoWallet), After: 200 * time.Millisecond})
		if !checkThenLock.MatchString(stdout) {
			t.Errorf("stdout = %q, want the check line, with no unknown outcome, and the lock line", stdout)
		}
	})
	t.Run("json", func(t *testing.T) {
		stdout, _ := testenv.Interrupt(t, run, testenv.CtrlC{Args: []string{"-json", "-work", "100ms"}, Key: balance, After: 300 * time.Millisecond})
		var got struct {
			Interrupted bool            `json:"interrupted"`
			Phases      []lesson.Result `json:"phases"`
			CutShort    *lesson.Result  `json:"interrupted_phase"`
		}
		if err := json.Unmarshal([]byte(stdout), &got); err != nil {
			t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
		}
		if !got.Interrupted || len(got.Phases) != 0 || got.CutShort == nil || got.CutShort.Verdict != "OK" {
			t.Errorf("got %+v, want interrupted, no phase for the lesson, and what was measured as interrupted_phase, OK", got)
		}
	})
}

var checkThenLock = regexp.MustCompile(`^accepted=\d+ balance=\d+ expected=\d+ OK linearizable=(yes|unknown)\nlock key left behind: no \(released with \w+, Redis [\d.]+\)\n$`)

func TestRun_redisUnreachable(t *testing.T) { testenv.RedisUnreachable(t, run) }

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

// -json keeps every key a run printed before the shared report
// (internal/harness): testdata/json-contract.json.
func TestRun_jsonKeepsEveryKey(t *testing.T) { testenv.JSONKeepsKeys(t, run) }
