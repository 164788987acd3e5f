package harness

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/lock"
)

// A lock lesson's flags refuse bad values with the first problem, in one
// line, as every step that has them prints it.
func TestLockFlags_refuseTheFirstBadValue(t *testing.T) {
	tests := []struct {
		name string
		wait time.Duration // the default of -wait; 0: no -wait
		args []string
		want string // "" to go on
	}{
		{"the defaults", time.Second, nil, ""},
		{"a TTL under a millisecond", time.Second, []string{"-ttl", "500us"}, "-ttl: lock: TTL must be at least 1ms, got 500µs"},
		{"the TTL before the spenders", time.Second, []string{"-ttl", "0", "-n", "0"}, "-ttl: lock: TTL must be at least 1ms"},
		{"no spenders", time.Second, []string{"-n", "0"}, "-n must be at least 1, -wait above 0 and -work at least 0"},
		{"no wait", time.Second, []string{"-wait", "0"}, "-n must be at least 1, -wait above 0 and -work at least 0"},
		{"no spenders, without -wait", 0, []string{"-n", "0"}, "-n must be at least 1 and -work at least 0"},
		{"negative work", 0, []string{"-work", "-1s"}, "-n must be at least 1 and -work at least 0"},
		{"too many spenders", time.Second, []string{"-n", "20000"}, "-n must be at most 10000, got 20000"},
		{"a wait too long", time.Second, []string{"-wait", "2h"}, "-wait must be at most 1h"},
		{"work too long", 0, []string{"-work", "2h"}, "-work must be at most 1h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			p := New("prog", "walletlock:test:", &stdout, &stderr)
			f := p.AddLockFlags(LockFlags{N: 3, TTL: time.Second, Wait: tt.wait, Work: time.Millisecond})
			code, ok := p.Parse(tt.args, nil, func() []error { return f.Check(lock.CheckTTL) })
			if tt.want == "" {
				if !ok || stderr.Len() > 0 {
					t.Fatalf("Parse(%q) = %d, %v (%q); want it to go on", tt.args, code, ok, stderr.String())
				}
				return
			}
			if ok || code != 2 || !strings.Contains(stderr.String(), tt.want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("Parse(%q) = %d, %v, stderr %q; want 2 and one line holding %q", tt.args, code, ok, stderr.String(), tt.want)
			}
		})
	}
}

func TestLockFlags_declareWaitOnlyWithADefault(t *testing.T) {
	p := New("prog", "walletlock:test:", &bytes.Buffer{}, &bytes.Buffer{})
	p.AddLockFlags(LockFlags{N: 1, TTL: time.Second, Work: 0})
	if p.Flags.Lookup("wait") != nil {
		t.Error("-wait is declared for a default of 0; want no -wait")
	}
	for _, name := range []string{"n", "ttl", "work"} {
		if p.Flags.Lookup(name) == nil {
			t.Errorf("-%s is not declared", name)
		}
	}
}
