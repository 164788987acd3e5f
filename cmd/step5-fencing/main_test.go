package main

import (
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// A's stale write lands with plain SQL and with the fence checked at the
// write only, and is refused once the read claims the row; the version
// column keeps fifty spends right with no Redis at all. On every run.
func TestStep5_theTwoHoldersOnEveryRun(t *testing.T) {
	rdb := testenv.Redis(t)
	testenv.Postgres(t)
	prefix := testenv.Prefix(t, rdb)
	want := "phase 1: accepted=2 balance=90 expected=80 BROKEN\n" +
		"phase 1b: accepted=2 balance=90 expected=80 BROKEN\n" +
		"phase 2: accepted=1 balance=90 expected=90 OK\n" +
		"phase 3: accepted=10 balance=0 expected=0 OK\n"
	for run := range 3 {
		ran := testenv.Run(t, "-prefix", prefix)
		if ran.Code != 0 || ran.Stdout != want {
			t.Fatalf("run %d: exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", run, ran.Code, ran.Stdout, want, ran.Stderr)
		}
	}
}

// With no PostgreSQL where DATABASE_URL says, one line says so, without
// the password, and the run's keys are gone.
func TestStep5_noPostgres(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	t.Setenv("DATABASE_URL", "postgres://walletlock:s3cret@127.0.0.1:1/walletlock?sslmode=disable")
	ran := testenv.Run(t, "-prefix", prefix)
	if ran.Code != 1 || strings.Contains(ran.Stderr, "s3cret") || !strings.Contains(ran.Stderr, "make up") || strings.Count(ran.Stderr, "\n") != 1 {
		t.Errorf("exit %d, stderr %q", ran.Code, ran.Stderr)
	}
	if keys := rdb.Keys(t.Context(), prefix+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left behind: %v", keys)
	}
}
