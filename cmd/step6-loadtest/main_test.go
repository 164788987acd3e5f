package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/loadtest"
	"example.com/walletlock/wallet"
)

// own is a run's keys and wallet ids of the test's own.
type own struct {
	prefix  string
	firstID int64
	rdb     *redis.Client
}

// ownArgs returns flags that keep a run on keys and wallet ids of the
// test's own, with a short, light workload, and what they chose.
func ownArgs(t *testing.T, more ...string) ([]string, own) {
	t.Helper()
	o := own{rdb: testenv.Redis(t), firstID: testenv.WalletID(t)}
	testenv.Postgres(t)
	o.prefix = testenv.Prefix(t, o.rdb)
	return append([]string{
		"-prefix", o.prefix,
		"-first-id", fmt.Sprint(o.firstID),
		"-workers", "6", "-wallets", "3",
	}, more...), o
}

func TestRun_badFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag", []string{"-nope"}, "-nope"},
		{"not a number", []string{"-workers", "many"}, "-workers"},
		{"no workers", []string{"-workers", "0"}, "-workers"},
		{"negative workers", []string{"-workers", "-4"}, "-workers"},
		{"no wallets", []string{"-wallets", "0"}, "-wallets"},
		{"no duration", []string{"-duration", "0s"}, "-duration"},
		{"negative duration", []string{"-duration", "-1s"}, "-duration"},
		{"unknown strategy", []string{"-strategy", "mutex"}, `"mutex"`},
		{"one unknown among others", []string{"-strategy", "lock,mutex"}, `"mutex"`},
		{"a TTL under 1ms", []string{"-ttl", "0"}, "-ttl"},
		{"nothing to spend", []string{"-amount", "0"}, "-amount"},
		{"negative ops", []string{"-ops", "-1"}, "-ops"},
		{"a stray argument", []string{"lock"}, `"lock"`},
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
			// Our own messages are one line; the flag package adds its
			// usage after its own.
			if strings.HasPrefix(first, "step6-loadtest: ") && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr is not one line:\n%s", stderr.String())
			}
		})
	}
}

func TestRun_serviceUnreachable(t *testing.T) {
	tests := []struct {
		name, env, value, strategy, want string
	}{
		{"Redis", "REDIS_ADDR", "127.0.0.1:1", "lock", "127.0.0.1:1"},
		{"PostgreSQL", "DATABASE_URL", "postgres://walletlock:walletlock@127.0.0.1:1/walletlock?sslmode=disable", "version", "127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", "")
			t.Setenv(tt.env, tt.value)
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := run(context.Background(), []string{"-strategy", tt.strategy}, &stdout, &stderr)
			if code != 1 {
				t.Errorf("run = %d, want 1", code)
			}
			// A hang guard with room for a busy machine, not a speed test.
			if took := time.Since(start); took > 2*wallet.ConnectTimeout+4*time.Second {
				t.Errorf("run took %v to give up", took)
			}
			msg := stderr.String()
			if strings.Count(msg, "\n") != 1 || !strings.Contains(msg, tt.want) || !strings.Contains(msg, "make up") {
				t.Errorf("stderr = %q, want one line naming %s and `make up`", msg, tt.want)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

// -json prints one object a workshop runner can read: every strategy's
// verdict as a lesson.Result, and nothing on stderr (no bar off a terminal).
func TestRun_jsonReport(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "300ms", "-json")
	code := run(context.Background(), args, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if stderr.Len() > 0 {
		t.Errorf("stderr = %q, want nothing", stderr.String())
	}
	var rep loadtest.Report
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
	for _, p := range rep.Phases {
		if p.Phase != "none" && !p.Match() {
			t.Errorf("phase %s: %s, want %s", p.Phase, p.Check, p.Want)
		}
	}
	if rep.Params.Workers != 6 || rep.Params.Wallets != 3 || rep.System.Redis == "" || rep.System.Postgres == "" || rep.PeakRSSBytes <= 0 {
		t.Errorf("params %+v, system %+v, peak RSS %d", rep.Params, rep.System, rep.PeakRSSBytes)
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
		regexp.MustCompile(`(?m)^none:\s+accepted=\d+ balance=\d+ expected=\d+ BROKEN$`),
		regexp.MustCompile(`(?m)^lock:\s+accepted=\d+ balance=\d+ expected=\d+ OK$`),
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
		key := wallet.BalanceKey(o.prefix, o.firstID)
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
