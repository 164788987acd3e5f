package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/loadtest"
)

// own is a run's keys and wallet ids of the test's own.
type own struct {
	prefix  string
	firstID int64
	rdb     redis.UniversalClient
}

// ownArgs returns flags that keep a run on keys and wallet ids of the
// test's own, with a short, light workload, and what they chose. The
// run's rows, which its prefix owns, are deleted when the test ends: a run
// that could not delete them (Redis or PostgreSQL too slow after Ctrl-C)
// names them, and the test must not leave them.
func ownArgs(t *testing.T, more ...string) ([]string, own) {
	t.Helper()
	o := own{rdb: testenv.Redis(t), firstID: labtest.WalletID(t)}
	pool := testenv.Postgres(t)
	o.prefix = labtest.Prefix(t, o.rdb)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE owner = $1", o.prefix); err != nil && !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("delete the rows of %s: %v", o.prefix, err)
		}
	})
	return append([]string{
		"-prefix", o.prefix,
		"-first-id", fmt.Sprint(o.firstID),
		"-workers", "6", "-wallets", "3",
	}, more...), o
}

func TestRun_badFlags(t *testing.T) {
	labtest.BadFlags(t, run, []labtest.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "not a number", Args: []string{"-workers", "many"}, Want: "-workers"},
		{Name: "no workers", Args: []string{"-workers", "0"}, Want: "-workers"},
		{Name: "negative workers", Args: []string{"-workers", "-4"}, Want: "-workers"},
		{Name: "no wallets", Args: []string{"-wallets", "0"}, Want: "-wallets"},
		{Name: "no duration", Args: []string{"-duration", "0s"}, Want: "-duration"},
		{Name: "negative duration", Args: []string{"-duration", "-1s"}, Want: "-duration"},
		{Name: "unknown strategy", Args: []string{"-strategy", "mutex"}, Want: `"mutex"`},
		{Name: "one unknown among others", Args: []string{"-strategy", "lock,mutex"}, Want: `"mutex"`},
		{Name: "a TTL under 1ms", Args: []string{"-ttl", "0"}, Want: "-ttl"},
		{Name: "nothing to spend", Args: []string{"-amount", "0"}, Want: "-amount"},
		{Name: "negative ops", Args: []string{"-ops", "-1"}, Want: "-ops"},
		{Name: "a stray argument", Args: []string{"lock"}, Want: `"lock"`},
		// Bounds: a typo must not insert 10^8 rows into a shared database.
		{Name: "too many wallets", Args: []string{"-wallets", "100000000"}, Want: "-wallets must be at most 1000000"},
		{Name: "too many workers", Args: []string{"-workers", "20000"}, Want: "-workers must be at most 10000"},
		{Name: "balances past int64", Args: []string{"-initial", "9223372036854775807", "-wallets", "2"}, Want: "-initial"},
		{Name: "an empty prefix", Args: []string{"-prefix", ""}, Want: "-prefix must not be empty"},
		{Name: "a pool past the bound", Args: []string{"-pool", "5000"}, Want: "-pool must be 0 (sized to the workers) or 1 to 1024 connections, got 5000"},
		{Name: "a negative pool", Args: []string{"-pool", "-1"}, Want: "-pool must be 0"},
		{Name: "a pool that is not a number", Args: []string{"-pool", "big"}, Want: "-pool"},
		// -workers takes a list too: the contention sweep.
		{Name: "an empty workers list", Args: []string{"-workers", ""}, Want: "-workers"},
		{Name: "a hole in the list", Args: []string{"-workers", "2,,8"}, Want: `-workers wants a count or a list of counts such as 2,8,50, got "2,,8"`},
		{Name: "a word in the list", Args: []string{"-workers", "2,eight"}, Want: "-workers"},
		{Name: "a list ending in a comma", Args: []string{"-workers", "2,8,"}, Want: "-workers"},
		{Name: "no workers at one level", Args: []string{"-workers", "2,0,8"}, Want: "-workers must be at least 1, got 0"},
		{Name: "a level past the bound", Args: []string{"-workers", "2,20000"}, Want: "-workers must be at most 10000"},
		{Name: "too many levels", Args: []string{"-workers", "1,2,3,4,5,6,7,8,9,10,11"}, Want: "-workers lists 11 counts, at most 10"},
	})
}

func TestRun_help(t *testing.T) { labtest.Help(t, run) }

// Each strategy dials only the services it needs: lock needs Redis,
// version only PostgreSQL.
func TestRun_redisUnreachable(t *testing.T) { labtest.RedisUnreachable(t, run, "-strategy", "lock") }

func TestRun_postgresUnreachable(t *testing.T) {
	labtest.PostgresUnreachable(t, run, "-strategy", "version")
}

// jsonReport is the load test's -json: the figures, and every row's verdict as a
// phase of the lesson with its worker count.
type jsonReport struct {
	loadtest.Report
	Step   string `json:"step"`
	Phases []struct {
		lesson.Result
		Workers int `json:"workers"`
	} `json:"phases"`
}

// -json prints one object a workshop runner can read: every strategy's
// verdict as a lesson.Result, and nothing on stderr (no bar off a terminal).
func TestRun_jsonReport(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "300ms", "-json")
	redlockNodes(t)
	code := run(context.Background(), args, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
	var rep jsonReport
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("stdout is not one report: %v", err)
	}
	if dec.More() {
		t.Error("stdout holds more than one JSON value")
	}
	if len(rep.Phases) != len(loadtest.Strategies()) {
		t.Fatalf("%d phases, want %d", len(rep.Phases), len(loadtest.Strategies()))
	}
	for i, p := range rep.Phases {
		if p.Step != step || p.Phase != rep.Rows[i].Strategy || p.Workers != 6 || p.Check != rep.Rows[i].Check {
			t.Errorf("phase %+v, want row %d's strategy, check and workers", p, i)
		}
		if p.Phase != "none" && !p.Match() {
			t.Errorf("phase %s: %s, want %s", p.Phase, p.Check, p.Want)
		}
	}
	if rep.Params.Workers != 6 || rep.Params.Wallets != 3 || rep.System.Redis == "" || rep.System.Postgres == "" || rep.PeakRSSBytes <= 0 {
		t.Errorf("params %+v, system %+v, peak RSS %d", rep.Params, rep.System, rep.PeakRSSBytes)
	}
	for _, r := range rep.Rows {
		if r.Workers != 6 {
			t.Errorf("%s: workers %d, want 6", r.Strategy, r.Workers)
		}
	}
}

// redlockNodes starts three redis-servers of the test's own and points
// REDLOCK_ADDRS at them for the rest of the test.
func redlockNodes(t *testing.T) {
	t.Helper()
	var addrs []string
	for range 3 {
		addrs = append(addrs, labtest.StartRedis(t).Addr)
	}
	t.Setenv("REDLOCK_ADDRS", strings.Join(addrs, ","))
}

// deadRedlock points REDLOCK_ADDRS at three loopback ports where nothing
// listens, and returns them.
func deadRedlock(t *testing.T) []string {
	t.Helper()
	var addrs []string
	for range 3 {
		addrs = append(addrs, labtest.DeadAddr(t))
	}
	t.Setenv("REDLOCK_ADDRS", strings.Join(addrs, ","))
	return addrs
}

// Asked for redlock without its nodes, the run fails at once, in one line
// that says how many answered and how to start them.
func TestRun_redlockWithoutItsNodes(t *testing.T) {
	args, _ := ownArgs(t, "-strategy", "redlock")
	dead := deadRedlock(t)
	labtest.FailsInOneLine(t, run, args, "0 of 3 answer", dead[0], "make redlock-up", "REDLOCK_ADDRS")
}

// REDLOCK_ADDRS that names one node three times is a configuration
// mistake: exit 2 and one line, before any spend waits on a majority that
// cannot be had.
func TestRun_redlockOneNodeNamedThrice(t *testing.T) {
	args, _ := ownArgs(t, "-strategy", "redlock")
	t.Setenv("REDLOCK_ADDRS", "127.0.0.1:6380,127.0.0.1:6380,localhost:6380")
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), args, &stdout, &stderr); code != 2 {
		t.Errorf("run = %d, want 2", code)
	}
	if msg := stderr.String(); strings.Count(msg, "\n") != 1 || !strings.Contains(msg, "names one node twice") || stdout.Len() > 0 {
		t.Errorf("stdout %q, stderr %q; want nothing, and one line saying one node is named twice", stdout.String(), msg)
	}
}

// The default run needs only `make up`: without the Redlock nodes it runs
// every other strategy, and one line on stderr says what it left out.
func TestRun_defaultRunLeavesRedlockOutWithoutItsNodes(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "100ms", "-json")
	deadRedlock(t)
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if msg := stderr.String(); strings.Count(msg, "\n") != 1 ||
		!strings.HasPrefix(msg, "loadtest: leaving redlock out: ") || !strings.Contains(msg, "make redlock-up") {
		t.Errorf("stderr = %q, want one line that leaves redlock out and names make redlock-up", msg)
	}
	var rep struct {
		Phases []struct {
			Phase string `json:"phase"`
		} `json:"phases"`
		LeftOut map[string]string `json:"left_out"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not one report: %v", err)
	}
	if why := rep.LeftOut[loadtest.Redlock]; !strings.Contains(why, "make redlock-up") {
		t.Errorf("left_out = %q, want redlock with the reason (the workshop reads it)", rep.LeftOut)
	}
	var got []string
	for _, p := range rep.Phases {
		got = append(got, p.Phase)
	}
	want := slices.DeleteFunc(loadtest.Strategies(), func(s string) bool { return s == loadtest.Redlock })
	if !slices.Equal(got, want) {
		t.Errorf("phases %v, want %v", got, want)
	}
}

// -workers 2,4 is a sweep: one JSON row per strategy and worker count,
// in that order, each with the keys of a single run's rows plus workers,
// fifo_bound_ms and vs_none; the verdicts are one phase per row.
func TestRun_sweepJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "300ms", "-strategy", "none,fair,atomic", "-workers", "2,4", "-hot", "-json")
	if code := run(context.Background(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	var rep struct {
		Params struct {
			Workers int   `json:"workers"`
			Sweep   []int `json:"workers_sweep"`
		} `json:"params"`
		Rows   []map[string]any `json:"strategies"`
		Phases []struct {
			Phase, Verdict, Want string
			Workers              int
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not a report: %v\n%s", err, stdout.String())
	}
	if rep.Params.Workers != 4 || fmt.Sprint(rep.Params.Sweep) != "[2 4]" {
		t.Errorf("params: workers %d, sweep %v; want 4 (the most) and [2 4]", rep.Params.Workers, rep.Params.Sweep)
	}
	want := []string{"none 2", "fair 2", "atomic 2", "none 4", "fair 4", "atomic 4"}
	var got []string
	for _, row := range rep.Rows {
		got = append(got, fmt.Sprintf("%v %v", row["strategy"], row["workers"]))
		for _, key := range []string{"strategy", "accepted_per_second", "attempts", "spend_latency", "ceiling_per_second",
			"efficiency", "check", "ok", "measured", "workers", "fifo_bound_ms", "vs_none"} {
			if _, ok := row[key]; !ok {
				t.Errorf("row %v %v has no key %q", row["strategy"], row["workers"], key)
			}
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	got = nil
	for _, p := range rep.Phases {
		got = append(got, fmt.Sprintf("%s %d", p.Phase, p.Workers))
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("phases %v, want one per row: %v", got, want)
	}
	for _, p := range rep.Phases {
		if p.Phase != "none" && p.Verdict != p.Want {
			t.Errorf("phase %s: %s, want %s", p.Phase, p.Verdict, p.Want)
		}
	}
}

// The table ends with a check line per strategy; the control's BROKEN is
// reported without failing the run.
func TestRun_tableWithTheControlBroken(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "300ms", "-strategy", "none,lock", "-hot")
	code := run(context.Background(), args, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("run = %d, want 0 (none is expected to be BROKEN); stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	out := stdout.String()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^none:\s+accepted=\d+ balance=\d+ expected=\d+ BROKEN linearizable=no$`),
		regexp.MustCompile(`(?m)^lock:\s+accepted=\d+ balance=\d+ expected=\d+ OK linearizable=yes$`),
		regexp.MustCompile(`(?m)^\s*none\s.*BROKEN: 1 wallet off by [\d,]+$`),
		regexp.MustCompile(`(?m)^Ceiling: 1 critical section at once`),
	} {
		if !want.MatchString(out) {
			t.Errorf("stdout does not match %s:\n%s", want, out)
		}
	}
}

// Ctrl-C: what was measured is printed, marked as interrupted, and the
// exit status says the run did not finish.
func TestRun_interrupted(t *testing.T) {
	args, o := ownArgs(t, "-duration", "1m", "-strategy", "lock,forupdate", "-hot")
	ctx, cancel := context.WithCancel(context.Background())
	// Cancel once the lock phase is spending, however slow the setup.
	go func() {
		defer cancel()
		key := ledger.BalanceKey(o.prefix, o.firstID)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if bal, err := o.rdb.Get(ctx, key).Int64(); err == nil && bal < loadtest.Defaults().Initial {
				time.Sleep(200 * time.Millisecond)
				return
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	if code := run(ctx, args, &stdout, &stderr); code != 130 {
		t.Errorf("run = %d, want 130; stderr:\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"OK (interrupted)", "interrupted: the last row is partial; not run: forupdate"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout does not say %q:\n%s", want, out)
		}
	}
}

// A timeout too short for any spend measures nothing: the rows say so
// instead of OK, and the run fails (issue 10, defect 4c: 729,609 errors,
// every verdict OK, exit 0).
func TestRun_aTimeoutNoSpendMeetsMeasuresNothing(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "300ms", "-strategy", "lock,version", "-timeout", "1ns", "-json")
	if code := run(context.Background(), args, &stdout, &stderr); code != 1 {
		t.Errorf("run = %d, want 1; stderr:\n%s", code, stderr.String())
	}
	var rep loadtest.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Rows) != 2 {
		t.Fatalf("stdout is not a report with two rows (%v):\n%s", err, stdout.String())
	}
	for _, r := range rep.Rows {
		if r.Measured || r.Note != "no spend accepted" || !strings.HasPrefix(r.Verdict(), "NO DATA") || r.Errors == 0 {
			t.Errorf("%s: measured %v, note %q, verdict %q, %d errors; want NO DATA", r.Strategy, r.Measured, r.Note, r.Verdict(), r.Errors)
		}
	}
	want := "loadtest: measured nothing: lock (no spend accepted), version (no spend accepted)\n"
	if stderr.String() != want {
		t.Errorf("stderr = %q, want %q", stderr.String(), want)
	}
}

// Two runs at once own what they write: with different prefixes they get
// different wallets by default and both measure right; a second run on the
// same prefix, or on wallets the first holds, is refused in one line that
// says who holds them and what to change, and leaves the first run alone
// (issue 10, defect 5).
func TestRun_twoRunsAtOnce(t *testing.T) {
	rdb := testenv.Redis(t)
	pool := testenv.Postgres(t)
	light := []string{"-workers", "4", "-wallets", "3", "-strategy", "version,forupdate"}

	t.Run("different prefixes, default wallets: both run", func(t *testing.T) {
		prefixes := []string{labtest.Prefix(t, rdb), labtest.Prefix(t, rdb)}
		var wg sync.WaitGroup
		outs := make([]bytes.Buffer, 2)
		codes := make([]int, 2)
		for i, prefix := range prefixes {
			wg.Go(func() {
				var stderr bytes.Buffer
				args := append([]string{"-prefix", prefix, "-duration", "500ms", "-json"}, light...)
				if codes[i] = run(context.Background(), args, &outs[i], &stderr); codes[i] != 0 {
					t.Errorf("run %d = %d; stderr:\n%s", i, codes[i], stderr.String())
				}
			})
		}
		wg.Wait()
		for i, prefix := range prefixes {
			var rep loadtest.Report
			if err := json.Unmarshal(outs[i].Bytes(), &rep); err != nil {
				t.Fatalf("run %d: %v", i, err)
			}
			if rep.Params.FirstID != ledger.FirstIDFor(prefix) {
				t.Errorf("run %d: first id %d, want %d, derived from its prefix", i, rep.Params.FirstID, ledger.FirstIDFor(prefix))
			}
			for _, r := range rep.Rows {
				if !r.OK || !r.Measured {
					t.Errorf("run %d, %s: %s", i, r.Strategy, r.Verdict())
				}
			}
		}
	})

	t.Run("the same prefix: refused", func(t *testing.T) {
		labtest.SecondRunRefused(t, run, append([]string{"-duration", "1s"}, light...)...)
	})

	t.Run("wallets another run holds: refused, naming it", func(t *testing.T) {
		args, o := ownArgs(t, "-duration", "1m", "-strategy", "version")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan int, 1)
		var first bytes.Buffer
		go func() {
			var stderr bytes.Buffer
			done <- run(ctx, args, &first, &stderr)
		}()
		// The first run holds its wallets once they carry its prefix.
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			var n int
			pool.QueryRow(ctx, "SELECT count(*) FROM walletlock_wallets WHERE owner = $1", o.prefix).Scan(&n)
			if n == 3 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the first run did not set up its wallets within 30 s")
			}
		}
		second := append(append([]string{}, light...), "-prefix", labtest.Prefix(t, rdb), "-first-id", fmt.Sprint(o.firstID), "-duration", "200ms")
		labtest.FailsInOneLine(t, run, second, o.prefix, "-first-id", "-prefix")
		cancel()
		if code := <-done; code != 130 {
			t.Errorf("the first run = %d, want 130", code)
		}
		if !strings.Contains(first.String(), "OK (interrupted)") {
			t.Errorf("the first run was disturbed:\n%s", first.String())
		}
	})
}

// -json keeps every key a run printed before the shared report
// (internal/harness): testdata/json-contract.json, a run of every strategy.
func TestRun_jsonKeepsEveryKey(t *testing.T) {
	testenv.Postgres(t)
	labtest.JSONKeepsKeys(t, run, "-first-id", fmt.Sprint(labtest.WalletID(t)), "-duration", "300ms", "-workers", "6", "-wallets", "3")
}
