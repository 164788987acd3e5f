package main

import (
	"bytes"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lesson"
)

func TestMissing_namesEveryPhaseNotReported(t *testing.T) {
	var all []row
	for _, p := range lesson.Phases {
		all = append(all, row{Result: lesson.Result{Step: p.Step, Phase: p.Phase}})
	}
	if got := missing(all); len(got) != 0 {
		t.Errorf("missing(every phase) = %q, want nothing", got)
	}
	got := missing(all[1:])
	first := lesson.Phases[0]
	if len(got) != 1 || !strings.Contains(got[0], first.Step) || !strings.Contains(got[0], first.Phase) {
		t.Errorf("missing(all but the first) = %q, want one line naming %s phase %s", got, first.Step, first.Phase)
	}
}

func TestPrintTable_marksMismatches(t *testing.T) {
	rep := report{Phases: []row{
		{lesson.NewResult("step2-lock", "lock", "accepted=10 balance=0 expected=0 OK", true), true},
		{lesson.NewResult("step3-ttl", "2", "accepted=2 balance=90 expected=80 BROKEN", false), false},
	}}
	var out bytes.Buffer
	printTable(&out, rep)
	lines := strings.Split(out.String(), "\n")
	var ok, bad string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "step2-lock"):
			ok = l
		case strings.HasPrefix(l, "step3-ttl"):
			bad = l
		}
	}
	if !strings.Contains(ok, " yes ") {
		t.Errorf("matching row = %q, want it marked yes", ok)
	}
	if !strings.Contains(bad, " NO ") || !strings.Contains(bad, "BROKEN") {
		t.Errorf("mismatched row = %q, want it marked NO with the actual verdict", bad)
	}
}

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "a stray argument", Args: []string{"step1-race"}, Want: `unexpected argument "step1-race"`},
	})
}

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

// Both services are checked before anything is built or run, Redis first.
func TestRun_redisUnreachable(t *testing.T) { testenv.RedisUnreachable(t, run) }

func TestRun_postgresUnreachable(t *testing.T) {
	testenv.Redis(t)
	testenv.PostgresUnreachable(t, run)
}
