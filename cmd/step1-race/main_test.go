package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet"
)

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
		// defaults: 50 spenders taking 10 each from 100.
		if want := wallet.Check(100, 10, accepted, balance).String(); line != want {
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

func TestRun_badFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "unknown flag", Args: []string{"-nope"}, Want: "-nope"},
		{Name: "not a number", Args: []string{"-runs", "ten"}, Want: "-runs"},
		{Name: "no spenders", Args: []string{"-n", "0"}, Want: "-n"},
		{Name: "nothing to spend", Args: []string{"-amount", "0"}, Want: "-amount"},
		{Name: "negative balance", Args: []string{"-initial", "-1"}, Want: "-initial"},
		{Name: "negative work", Args: []string{"-work", "-1ms"}, Want: "-work"},
		{Name: "no runs", Args: []string{"-runs", "0"}, Want: "-runs"},
	})
}

func TestRun_help(t *testing.T) { testenv.Help(t, run) }

func TestRun_redisUnreachable(t *testing.T) { testenv.RedisUnreachable(t, run) }
