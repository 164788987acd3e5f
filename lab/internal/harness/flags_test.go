package harness

import (
	"bytes"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		code       int
		stop       bool
		out, err   string
		errOneLine bool
	}{
		{"no flags", nil, 0, false, "", "", false},
		{"a good flag", []string{"-n", "3"}, 0, false, "", "", false},
		{"help", []string{"-h"}, 0, true, "-n int", "", false},
		{"unknown flag", []string{"-nope"}, 2, true, "", "prog: flag provided but not defined: -nope (see -h)", true},
		{"bad value", []string{"-n", "x"}, 2, true, "", `prog: invalid value "x" for flag -n`, true},
		{"stray argument", []string{"extra"}, 2, true, "", `prog: unexpected argument "extra"`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("prog", flag.ContinueOnError)
			fs.Int("n", 1, "how many")
			var stdout, stderr bytes.Buffer
			code, stop := Parse(fs, tt.args, &stdout, &stderr)
			if code != tt.code || stop != tt.stop {
				t.Fatalf("Parse(%q) = %d, %v; want %d, %v", tt.args, code, stop, tt.code, tt.stop)
			}
			if !strings.Contains(stdout.String(), tt.out) || (tt.out == "" && stdout.Len() > 0) {
				t.Errorf("stdout = %q, want it to hold %q", stdout.String(), tt.out)
			}
			if !strings.Contains(stderr.String(), tt.err) || (tt.err == "" && stderr.Len() > 0) {
				t.Errorf("stderr = %q, want it to hold %q", stderr.String(), tt.err)
			}
			if tt.errOneLine && strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr = %q, want one line", stderr.String())
			}
		})
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string // "" for nil
	}{
		{"a prefix", CheckPrefix("walletlock:demo:"), ""},
		{"an empty prefix", CheckPrefix(""), ErrEmptyPrefix.Error()},
		{"a test's prefix", CheckPrefix("test:TestDrill_interrupt-x.1:7:"), ""},
		{"a quote, which would break the SQL printed for pasting", CheckPrefix("walletlock:bob's:"), `"walletlock:bob's:" holds '\''`},
		{"a command substitution", CheckPrefix("walletlock:$(touch /tmp/x):"), ErrBadPrefix.Error()},
		{"a LIKE wildcard other than _", CheckPrefix("walletlock:100%:"), `holds '%'`},
		{"a glob", CheckPrefix("walletlock:*:"), `holds '*'`},
		{"a hash tag", CheckPrefix("walletlock:{x}:"), `holds '{'`},
		{"a space", CheckPrefix("walletlock: x:"), `holds ' '`},
		{"a control character, quoted in the error", CheckPrefix("a\x1b]0;pwned\a:"), `"a\x1b]0;pwned\a:" holds '\x1b'`},
		{"a letter beyond ASCII", CheckPrefix("walletlock:é:"), `holds 'é'`},
		{"a duration at the bound", CheckDuration("-work", MaxDuration), ""},
		{"a duration above it", CheckDuration("-work", 1_000_000*time.Hour), "-work must be at most 1h, got 1000000h0m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			switch {
			case tt.want == "" && tt.err != nil:
				t.Errorf("err = %v, want nil", tt.err)
			case tt.want != "" && (tt.err == nil || !strings.Contains(tt.err.Error(), tt.want)):
				t.Errorf("err = %v, want it to contain %q", tt.err, tt.want)
			}
		})
	}
}

func TestRefuse_printsTheFirstErrorInOneLine(t *testing.T) {
	fs := flag.NewFlagSet("prog", flag.ContinueOnError)
	var stderr bytes.Buffer
	if code, stop := Refuse(fs, &stderr, nil, nil); code != 0 || stop || stderr.Len() > 0 {
		t.Errorf("Refuse(no errors) = %d, %v, stderr %q; want 0, false, nothing", code, stop, stderr.String())
	}
	code, stop := Refuse(fs, &stderr, nil, ErrEmptyPrefix, CheckDuration("-work", 2*MaxDuration))
	if want := "prog: " + ErrEmptyPrefix.Error() + "\n"; code != 2 || !stop || stderr.String() != want {
		t.Errorf("Refuse = %d, %v, stderr %q; want 2, true, %q", code, stop, stderr.String(), want)
	}
}

func TestRedisDelPrefix(t *testing.T) {
	// The pattern matches the prefix itself, not what its * or ? would.
	got := RedisDelPrefix(&redis.UniversalOptions{Addrs: []string{"localhost:6379"}}, "walletlock:a*b?:")
	if want := `redis-cli --scan --pattern 'walletlock:a\*b\?:*' | xargs redis-cli del`; got != want {
		t.Errorf("RedisDelPrefix = %q, want %q", got, want)
	}
	// On a cluster SCAN sees one node: every master is scanned.
	got = RedisDelPrefix(&redis.UniversalOptions{Addrs: []string{"127.0.0.1:7001", "127.0.0.1:7002"}}, "walletlock:")
	if want := `for n in $(redis-cli -c -h 127.0.0.1 -p 7001 cluster nodes | awk '/master/ {sub(/@.*/, "", $2); print $2}'); do ` +
		`redis-cli -c -h "${n%:*}" -p "${n##*:}" --scan --pattern 'walletlock:*' | xargs -n 1 redis-cli -c -h "${n%:*}" -p "${n##*:}" del; done`; got != want {
		t.Errorf("RedisDelPrefix on a cluster = %q, want %q", got, want)
	}
}

func TestPick(t *testing.T) {
	all := []string{"lock", "fenced", "version"}
	tests := []struct {
		value string
		want  []string
		err   string // a part of the error; "" for none
	}{
		{"all", all, ""},
		{"fenced", []string{"fenced"}, ""},
		{"version,lock", []string{"version", "lock"}, ""},
		{"lock, lock", []string{"lock"}, ""},
		{"lock,hope", nil, `unknown -strategy "hope" (want all or some of lock, fenced, version)`},
		{"", nil, `unknown -strategy ""`},
		{"lock,", nil, `unknown -strategy ""`},
		{"ALL", nil, `"ALL"`},
	}
	for _, tt := range tests {
		got, err := Pick("-strategy", tt.value, all)
		if tt.err == "" && (err != nil || !slices.Equal(got, tt.want)) {
			t.Errorf("Pick(%q) = %v, %v; want %v", tt.value, got, err, tt.want)
		}
		if tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("Pick(%q) = %v, %v; want an error with %s", tt.value, got, err, tt.err)
		}
	}
}
