package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/labtest"
)

func TestRun_badFlags(t *testing.T) {
	labtest.BadFlags(t, run, []labtest.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "a stray argument", Args: []string{"step1-race"}, Want: `unexpected argument "step1-race"`},
		{Name: "-compare without files", Args: []string{"-compare", "-html", "room.html"}, Want: "-compare needs the workshop JSON files"},
		{Name: "-html without -compare", Args: []string{"-html", "room.html"}, Want: "-html goes with -compare"},
		{Name: "-compare with -save", Args: []string{"-compare", "-save", "a.json"}, Want: "neither -json nor -save"},
		{Name: "an empty -host", Args: []string{"-host", " "}, Want: "-host must not be empty"},
		{Name: "an empty -prefix", Args: []string{"-prefix", ""}, Want: harness.ErrEmptyPrefix.Error()},
		{Name: "-addr without -serve", Args: []string{"-addr", "127.0.0.1:8080"}, Want: "-addr goes with -serve"},
		{Name: "-serve with -room", Args: []string{"-serve", "-room", "127.0.0.1:8080/abcd-efgh"}, Want: "-serve runs the room"},
		{Name: "-race without a room", Args: []string{"-race"}, Want: "-race joins the race of the room on -room's join line"},
		{Name: "-race with -save", Args: []string{"-race", "-room", "127.0.0.1:8080/abcd-efgh", "-save"}, Want: "-race runs the race alone"},
		{Name: "a round too short", Args: []string{"-serve", "-race", "-round", "1s"}, Want: "a round of the race lasts 5s or more"},
	})
}

func TestRun_help(t *testing.T) { labtest.Help(t, run) }

// Both services are checked before anything is built or run, Redis first.
func TestRun_redisUnreachable(t *testing.T) { labtest.RedisUnreachable(t, run) }

func TestRun_postgresUnreachable(t *testing.T) {
	testenv.Redis(t)
	labtest.PostgresUnreachable(t, run)
}

// Ctrl-C while a step runs reaches the step as an interrupt, not a kill:
// it cleans up, and the workshop prints the phases that ran and exits 130,
// saying it was interrupted. (A killed step left 32 keys and 16 rows.)
func TestRun_ctrlCWhileAStepRuns(t *testing.T) {
	rdb := testenv.Redis(t)
	pool := testenv.Postgres(t)
	namespace := labtest.Prefix(t, rdb)

	ctx, ctrlC := context.WithCancel(t.Context())
	defer ctrlC()
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"-prefix", namespace}, &stdout, &stderr) }()

	// Step 3 runs for about 9 s; the Ctrl-C comes a second into it. Before
	// that, the steps are built (slow the first time) and steps 1 and 2 run.
	balance := namespace + "*:step3-ttl:wallet:42:balance"
	for deadline := time.Now().Add(5 * time.Minute); len(rdb.Keys(ctx, balance).Val()) == 0; {
		select {
		case code := <-done:
			t.Fatalf("run = %d before step 3 wrote its balance; stderr:\n%s", code, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("step 3 did not start within 5 minutes")
		}
	}
	time.Sleep(time.Second)
	ctrlC()
	var code int
	select {
	case code = <-done:
	case <-time.After(harness.WaitDelay + 5*time.Second):
		t.Fatal("the workshop still runs after Ctrl-C")
	}

	errs := stderr.String()
	if code != harness.ExitInterrupted || !strings.Contains(errs, "workshop: interrupted by Ctrl-C during step3-ttl") {
		t.Errorf("run = %d, want %d and the interruption named; stderr:\n%s", code, harness.ExitInterrupted, errs)
	}
	if strings.Contains(errs, "did not print what the tutorial says") || strings.Contains(errs, "was killed") {
		t.Errorf("stderr blames the phases or a kill:\n%s", errs)
	}
	out := stdout.String()
	if !strings.Contains(out, "step1-race") || !strings.Contains(out, "step2-lock") || strings.Contains(out, " NO ") || strings.Contains(out, "FAILED") {
		t.Errorf("stdout:\n%s\nwant the phases of steps 1 and 2, all matching", out)
	}
	if keys := rdb.Keys(context.Background(), namespace+"*").Val(); len(keys) > 0 {
		t.Errorf("keys left under the run's tag: %q", keys)
	}
	var rows int
	err := pool.QueryRow(context.Background(), `SELECT CASE WHEN to_regclass('walletlock_wallets') IS NULL THEN 0
		ELSE (SELECT count(*) FROM walletlock_wallets WHERE starts_with(owner, $1)) END`, namespace).Scan(&rows)
	if err != nil {
		t.Fatal(err)
	}
	if rows > 0 {
		t.Errorf("%d PostgreSQL rows left under the run's tag", rows)
	}
}

// -json keeps every key of testdata/json-contract.json, a real run of the
// root's steps and the drill, every step's output within it included
// (TestDoc_keepsTheKeysOfAnOldFile holds it to the files of before). It
// runs every step, about a minute.
func TestRun_jsonKeepsEveryKey(t *testing.T) {
	testenv.Postgres(t)
	labtest.JSONKeepsKeys(t, run)
}
