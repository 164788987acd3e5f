package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/testenv"
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

// Without a lock the race is not a matter of luck: every one of ten runs
// must lose updates.
func TestRun_brokenEveryRun(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-runs", "10", "-prefix", prefix}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr is not empty:\n%s", stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 10 {
		t.Fatalf("got %d lines, want 10:\n%s", len(lines), stdout.String())
	}
	for i, line := range lines {
		var (
			accepted          int
			balance, expected int64
			word              string
		)
		if _, err := fmt.Sscanf(line, "accepted=%d balance=%d expected=%d %s", &accepted, &balance, &expected, &word); err != nil {
			t.Fatalf("line %d %q is not a check line: %v", i+1, line, err)
		}
		// The line must be what Check says about its own numbers, for the
		// defaults: 50 spenders taking 10 each from 100, and the history
		// of fifty spends that all read 100 is not linearizable.
		if want := wallet.Check(100, 10, accepted, balance).String() + " linearizable=no"; line != want {
			t.Errorf("line %d = %q, want %q", i+1, line, want)
		}
		if word != "BROKEN" {
			t.Errorf("line %d = %q, want BROKEN: step 1 has no lock", i+1, line)
		}
	}
	// The program cleans up after itself.
	if n := rdb.Exists(context.Background(), wallet.BalanceKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
		t.Error("the balance key is still there after run returned")
	}
}

// The spenders as four processes instead of fifty goroutines of one: they
// shared nothing but the Redis key before, and still do, so every run
// loses updates as before. JSON says how many processes ran.
func TestRun_procsBrokenEveryRun(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-procs", "4", "-runs", "5", "-json", "-prefix", prefix}, &stdout, &stderr)
	if code != 0 || stderr.Len() > 0 {
		t.Fatalf("run = %d, want 0 and nothing on stderr; stderr:\n%s", code, stderr.String())
	}
	var got struct {
		Procs  int `json:"procs"`
		Phases []struct {
			lesson.Result
			Linearizable string `json:"linearizable"`
		} `json:"phases"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout.String())
	}
	if got.Procs != 4 || len(got.Phases) != 5 {
		t.Fatalf("procs = %d and %d phases, want 4 and 5:\n%s", got.Procs, len(got.Phases), stdout.String())
	}
	for i, p := range got.Phases {
		if !checkLine.MatchString(p.Check+" linearizable="+p.Linearizable) || p.Linearizable != "no" || p.Verdict != "BROKEN" || !p.Match() {
			t.Errorf("run %d: %+v, want a BROKEN check line: step 1 has no lock, in one process or four", i+1, p)
		}
	}
	if n := rdb.Exists(context.Background(), wallet.BalanceKey(prefix, wallet.DemoWallet)).Val(); n != 0 {
		t.Error("the balance key is still there after run returned")
	}
}

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "not a number", Args: []string{"-runs", "ten"}, Want: "-runs"},
		{Name: "no spenders", Args: []string{"-n", "0"}, Want: "-n"},
		{Name: "nothing to spend", Args: []string{"-amount", "0"}, Want: "-amount"},
		{Name: "negative balance", Args: []string{"-initial", "-1"}, Want: "-initial"},
		{Name: "negative work", Args: []string{"-work", "-1ms"}, Want: "-work"},
		{Name: "no runs", Args: []string{"-runs", "0"}, Want: "-runs"},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: harness.ErrEmptyPrefix.Error()},
		{Name: "too many spenders", Args: []string{"-n", "10001"}, Want: "-n must be at most 10000"},
		{Name: "work beyond the bound", Args: []string{"-work", "1000000h"}, Want: "-work must be at most 1h"},
		{Name: "no processes", Args: []string{"-procs", "0"}, Want: "-procs must be between 1 and 64"},
		{Name: "too many processes", Args: []string{"-procs", "65"}, Want: "-procs must be between 1 and 64"},
		{Name: "more processes than spenders", Args: []string{"-procs", "5", "-n", "4"}, Want: "at most -n (4), got 5"},
		// 5 x 2^62 does not fit an int64: it wrapped to 0, and the check
		// line said OK.
		{Name: "spends that overflow", Args: []string{"-amount", "4611686018427387904", "-initial", "4611686018427387904", "-n", "5", "-work", "20ms"}, Want: "-amount 4611686018427387904 times -n 5 overflows an int64"},
	})
}

// The largest settings still fit: no refusal at the bounds.
func TestRun_largestSpendsThatFit(t *testing.T) {
	rdb := testenv.Redis(t)
	var stdout, stderr bytes.Buffer
	args := []string{"-prefix", testenv.Prefix(t, rdb), "-n", "2", "-amount", "4611686018427387903", "-initial", "9223372036854775807", "-work", "0"}
	if code := run(t.Context(), args, &stdout, &stderr); code == 2 {
		t.Fatalf("run(%q) = 2; stderr: %s", args, stderr.String())
	}
}

// A second run on the prefix of one that runs is refused, and the first
// is not disturbed.
func TestRun_secondRunOnThePrefixIsRefused(t *testing.T) {
	testenv.SecondRunRefused(t, run, "-runs", "20", "-work", "50ms")
}

// A check line; with unknown outcomes it names them and a range.
var checkLine = regexp.MustCompile(`^accepted=\d+ (unknown=\d+ )?balance=-?\d+ expected=-?\d+(\.\.-?\d+)? (OK|BROKEN) linearizable=(yes|no|unknown)$`)

// Ctrl-C stops the runs, prints the ones measured, cleans up and exits
// 130; with Redis frozen it still returns within the clean-up bound and
// names the key it could not delete.
func TestRun_ctrlC(t *testing.T) {
	balance := wallet.BalanceKey("", wallet.DemoWallet)
	for _, tt := range []struct {
		name string
		c    testenv.CtrlC
	}{
		{"mid-run", testenv.CtrlC{Args: []string{"-runs", "1000", "-work", "20ms"}, Key: balance, After: 300 * time.Millisecond}},
		{"Redis frozen", testenv.CtrlC{Args: []string{"-runs", "1000", "-work", "20ms"}, Key: balance, After: 300 * time.Millisecond, Frozen: true}},
		{"at the bound of -n", testenv.CtrlC{Args: []string{"-runs", "1000", "-n", "10000", "-work", "20ms"}, Key: balance, After: 300 * time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr := testenv.Interrupt(t, run, tt.c)
			lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
			for _, line := range lines {
				if !checkLine.MatchString(line) {
					t.Fatalf("stdout line %q is not a check line:\n%s", line, stdout)
				}
			}
			// Either between runs, or during the last one printed, or
			// during one that could not print.
			ok := strings.Contains(stderr, fmt.Sprintf("interrupted by Ctrl-C after %d of 1000 runs\n", len(lines))) ||
				strings.Contains(stderr, fmt.Sprintf("interrupted by Ctrl-C during run %d of 1000; its line counts only", len(lines))) ||
				strings.Contains(stderr, fmt.Sprintf("interrupted by Ctrl-C during run %d of 1000; its ", len(lines)+1))
			if !ok {
				t.Errorf("stderr = %q, want it to say which of the runs it interrupted, after %d lines", stderr, len(lines))
			}
		})
	}
}

// With -procs, Ctrl-C reaches the spender processes through the program
// alone: it stops them, cleans up and exits 130, and signals no one else.
func TestRun_ctrlCWithProcs(t *testing.T) {
	balance := wallet.BalanceKey("", wallet.DemoWallet)
	t.Run("between runs or during one", func(t *testing.T) {
		stdout, stderr := testenv.InterruptProcs(t, run, testenv.CtrlC{
			Args: []string{"-procs", "4", "-runs", "1000", "-work", "20ms"}, Key: balance, After: 300 * time.Millisecond,
		})
		for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
			if !checkLine.MatchString(line) {
				t.Fatalf("stdout line %q is not a check line:\n%s", line, stdout)
			}
		}
		if strings.Count(stderr, "\n") != 1 {
			t.Errorf("stderr = %q, want the one line that says what Ctrl-C interrupted", stderr)
		}
	})
	// The processes hear the interrupt and answer with their tallies: none
	// is killed, which would make each of its spends an unknown outcome.
	t.Run("mid-spend", func(t *testing.T) {
		stdout, _ := testenv.InterruptProcs(t, run, testenv.CtrlC{
			Args: []string{"-procs", "4", "-work", "30s"}, Key: balance, After: 1500 * time.Millisecond,
		})
		if want := "accepted=0 balance=100 expected=100 OK linearizable=unknown\n"; stdout != want {
			t.Errorf("stdout = %q, want %q: the spends cut short by Ctrl-C, none of unknown outcome", stdout, want)
		}
	})
}

func TestRun_jsonSaysInterrupted(t *testing.T) {
	stdout, _ := testenv.Interrupt(t, run, testenv.CtrlC{
		Args: []string{"-json", "-runs", "1000", "-work", "20ms"}, Key: wallet.BalanceKey("", wallet.DemoWallet), After: 300 * time.Millisecond,
	})
	var got struct {
		Interrupted bool            `json:"interrupted"`
		Phases      []lesson.Result `json:"phases"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if !got.Interrupted || len(got.Phases) == 0 {
		t.Errorf("got %+v, want interrupted and the runs measured before it", got)
	}
	for _, p := range got.Phases {
		if !p.Match() {
			t.Errorf("phase %+v: a run cut short belongs under interrupted_phase", p)
		}
	}
}

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

func TestRun_redisUnreachable(t *testing.T) { testenv.RedisUnreachable(t, run) }

// -json keeps every key a run printed before the shared report
// (internal/harness): testdata/json-contract.json.
func TestRun_jsonKeepsEveryKey(t *testing.T) { testenv.JSONKeepsKeys(t, run) }
