package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "-nope"},
		{"not a number", []string{"-runs", "ten"}, "-runs"},
		{"no spenders", []string{"-n", "0"}, "-n"},
		{"nothing to spend", []string{"-amount", "0"}, "-amount"},
		{"negative balance", []string{"-initial", "-1"}, "-initial"},
		{"negative work", []string{"-work", "-1ms"}, "-work"},
		{"no runs", []string{"-runs", "0"}, "-runs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("run(%q) = %d, want 2", tt.args, code)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
			first, _, _ := strings.Cut(stderr.String(), "\n")
			if !strings.Contains(first, tt.want) {
				t.Errorf("stderr starts with %q, want it to name %s", first, tt.want)
			}
		})
	}
}

func TestRun_redisUnreachable(t *testing.T) {
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := run(context.Background(), nil, &stdout, &stderr)
	if code != 1 {
		t.Errorf("run = %d, want 1", code)
	}
	// Twice the promised bound, plus room for a busy machine: a hang guard,
	// not a speed test.
	if took := time.Since(start); took > 2*wallet.ConnectTimeout+4*time.Second {
		t.Errorf("run took %v to give up", took)
	}
	msg := stderr.String()
	if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") {
		t.Errorf("stderr is not one line:\n%s", msg)
	}
	for _, want := range []string{"127.0.0.1:1", "make up"} {
		if !strings.Contains(msg, want) {
			t.Errorf("stderr %q does not mention %q", msg, want)
		}
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
}
