package env_test

import (
	"errors"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/env"
)

func TestRedlockAddrs(t *testing.T) {
	tests := []struct {
		env, want, err string
	}{
		{"", env.DefaultRedlockAddrs, ""},
		{"127.0.0.1:1, 127.0.0.1:2,127.0.0.1:3", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", ""},
		{"127.0.0.1:1,127.0.0.1:2", "", "names 2 nodes, Redlock needs at least 3"},
		{"127.0.0.1:1,nope,127.0.0.1:3", "", `"nope" is not host:port`},
		{"127.0.0.1:1,127.0.0.1:1,127.0.0.1:1", "", "names one node twice (127.0.0.1:1 and 127.0.0.1:1 are the same address)"},
		{"127.0.0.1:6380,localhost:6380,127.0.0.1:6381", "", "names one node twice (127.0.0.1:6380 and localhost:6380"},
		{"127.0.0.1:1,[::ffff:127.0.0.1]:1,127.0.0.1:3", "", "names one node twice"},
		{"localhost:1,localhost:2,localhost:3", "localhost:1,localhost:2,localhost:3", ""},
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv("REDLOCK_ADDRS", tt.env)
			got, err := env.RedlockAddrs()
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("RedlockAddrs() error = %v, want %q", err, tt.err)
				}
				if strings.Contains(tt.err, "twice") && !errors.Is(err, env.ErrSameRedlockNode) {
					t.Errorf("RedlockAddrs() error = %v, want one wrapping ErrSameRedlockNode", err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != tt.want {
				t.Errorf("RedlockAddrs() = %v, %v; want %s", got, err, tt.want)
			}
		})
	}
}
