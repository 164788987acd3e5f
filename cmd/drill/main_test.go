//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/drill"
	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/internal/testenv"
)

// The drill starts its own binary again as a spender; under go test that
// binary is this test binary, which must then be a spender and nothing else.
func TestMain(m *testing.M) {
	if c, ok := drill.SpenderRole(); ok {
		os.Exit(drill.RunSpender(c, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// needs skips (or fails under CI) without PostgreSQL or redis-server, and
// returns a prefix and a first wallet id no other test uses.
func needs(t *testing.T) (prefix, firstID string) {
	t.Helper()
	pool := testenv.Postgres(t)
	if _, err := drill.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	id := testenv.WalletID(t)
	prefix = fmt.Sprintf("test:%s:%d:", t.Name(), id)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE owner = $1", prefix)
	})
	return prefix, fmt.Sprint(id)
}

func rowsLeft(t *testing.T, prefix string) int {
	t.Helper()
	var n int
	if err := testenv.Postgres(t).QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE owner = $1", prefix).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The short drill of `make test`: pause and restart, lock and fenced, two
// seeds each, must give what the lesson table says in every seed: the lock
// breaks (and restart shows a double grant), the fence never does.
func TestDrill_shortMatchesLesson(t *testing.T) {
	matchesLesson(t, 8, "-nemesis", "pause,restart", "-strategy", "lock,fenced", "-seeds", "2")
}

// The failover of the master that holds the wallet's slot, in a Redis
// Cluster the drill starts itself: the lock breaks, the fence does not.
func TestDrill_clusterFailoverMatchesLesson(t *testing.T) {
	matchesLesson(t, 2, "-nemesis", drill.ClusterFailover, "-strategy", "lock,fenced")
}

// matchesLesson runs the drill with args and checks that each of its rows
// (want of them) gives the lesson table's verdict, and that it leaves no
// row behind.
func matchesLesson(t *testing.T, want int, args ...string) {
	t.Helper()
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), append(args, "-json", "-prefix", prefix, "-first-id", first), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	dec := json.NewDecoder(&stdout)
	seen := 0
	for dec.More() {
		var r struct {
			Nemesis, Strategy, Verdict, Want string
			Seed                             int64
			OK                               bool
			MoneyOff                         int64 `json:"money_off"`
			DoubleGrants                     int   `json:"double_grants"`
			Unknown                          int
			Faults                           int
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("a row is not JSON: %v", err)
		}
		seen++
		cell, ok := lesson.DrillWant(r.Nemesis, r.Strategy)
		if !ok {
			t.Fatalf("row for %s/%s, which the lesson table lacks", r.Nemesis, r.Strategy)
		}
		name := fmt.Sprintf("%s %s seed %d", r.Nemesis, r.Strategy, r.Seed)
		if r.Verdict != cell.Want || r.Want != cell.Want || r.OK != (cell.Want == lesson.OK) {
			t.Errorf("%s: verdict %s (ok %v, want field %s), the lesson says %s", name, r.Verdict, r.OK, r.Want, cell.Want)
		}
		if r.Faults != 1 {
			t.Errorf("%s: %d faults injected, want 1", name, r.Faults)
		}
		if r.OK != (r.MoneyOff == 0) {
			t.Errorf("%s: ok %v but money_off %d", name, r.OK, r.MoneyOff)
		}
		if r.Nemesis == drill.Restart && r.DoubleGrants == 0 {
			t.Errorf("%s: no double grant, though Redis came back empty under a holder", name)
		}
	}
	if seen != want {
		t.Errorf("%d rows, want %d (nemeses x strategies x seeds)", seen, want)
	}
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
}

// Redlock under the restart nemesis, two seeds each: a node is down when
// a holder takes the lock, comes back empty, and one of the holder's two
// nodes restarts empty. Another spender wins a majority while the first
// holds, every seed: redlock loses money, redlock-fenced does not. Both
// count the double grant; each run injects two faults.
func TestDrill_redlockRestartGrantsTwice(t *testing.T) {
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nemesis", "restart", "-strategy", "redlock,redlock-fenced", "-seeds", "2",
		"-json", "-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	dec := json.NewDecoder(&stdout)
	seen := 0
	for dec.More() {
		var r struct {
			Strategy, Verdict, Note string
			Seed                    int64
			MoneyOff                int64 `json:"money_off"`
			DoubleGrants            int   `json:"double_grants"`
			Faults                  int
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("a row is not JSON: %v", err)
		}
		seen++
		name := fmt.Sprintf("%s seed %d", r.Strategy, r.Seed)
		want := map[string]string{drill.Redlock: lesson.Broken, drill.RedlockFenced: lesson.OK}[r.Strategy]
		if r.Verdict != want || (r.MoneyOff == 0) != (want == lesson.OK) {
			t.Errorf("%s: %s with %d off, want %s", name, r.Verdict, r.MoneyOff, want)
		}
		if r.DoubleGrants == 0 || r.Faults != 2 || !strings.Contains(r.Note, "won a majority") {
			t.Errorf("%s: %d double grants, %d faults, note %q; want a double grant after two faults", name, r.DoubleGrants, r.Faults, r.Note)
		}
	}
	if seen != 4 {
		t.Errorf("%d rows, want 4 (2 strategies x 2 seeds)", seen)
	}
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
}

// A Sentinel failover means nothing to Redlock's independent nodes: the
// drill says so and runs nothing.
func TestDrill_failoverDoesNotApplyToRedlock(t *testing.T) {
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nemesis", "failover", "-strategy", "redlock", "-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "failover redlock skipped: Redlock's nodes are independent masters") {
		t.Errorf("stdout does not say failover was skipped:\n%s", stdout.String())
	}
}

// Ctrl-C in the middle of a run: the drill kills what it started, deletes
// its rows and exits 130, in bounded time.
func TestDrill_interrupt(t *testing.T) {
	prefix, first := needs(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-nemesis", "pause", "-strategy", "lock", "-seeds", "5",
			"-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	}()
	select {
	case code := <-done:
		if code != 130 {
			t.Fatalf("drill = %d after Ctrl-C, want 130; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drill did not stop within 20 s of Ctrl-C")
	}
	if !strings.Contains(stderr.String(), "interrupted by Ctrl-C") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr.String())
	}
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
}

func TestDrill_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown nemesis", Args: []string{"-nemesis", "meteor"}, Want: "-nemesis"},
		{Name: "unknown strategy", Args: []string{"-strategy", "hope"}, Want: "-strategy"},
		{Name: "too many seeds", Args: []string{"-seeds", "1000"}, Want: "-seeds"},
		{Name: "one process", Args: []string{"-procs", "1"}, Want: "-procs"},
		{Name: "short ttl", Args: []string{"-ttl", "1ms"}, Want: "-ttl"},
		{Name: "work as long as the ttl", Args: []string{"-work", "1s"}, Want: "-work"},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: "-prefix"},
		{Name: "stray argument", Args: []string{"now"}, Want: "unexpected argument"},
	})
}

// Without redis-server the drill says how to get it, in one line.
func TestDrill_noRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-nemesis", "none"}, &stdout, &stderr); code != 1 {
		t.Fatalf("drill = %d, want 1", code)
	}
	if got := stderr.String(); !strings.Contains(got, "make up") || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr = %q, want one line that names `make up`", got)
	}
}

// A cell the drill runs must have a verdict in the lesson table, and a
// cell it skips must have none: otherwise `-nemesis all -strategy all`
// runs a cell nobody judged, or skips one the lesson promises.
func TestApplies_runsExactlyTheLessonsCells(t *testing.T) {
	for _, n := range drill.Nemeses {
		for _, s := range drill.Strategies {
			applies, why := drill.Applies(n, s)
			_, judged := lesson.DrillWant(n, s)
			if applies != judged {
				t.Errorf("%s/%s: Applies = %v (%s), but the lesson table has a cell for it: %v", n, s, applies, why, judged)
			}
		}
	}
}
