package services_test

import (
	"strings"
	"testing"

	"example.com/walletlock/internal/services"
	"example.com/walletlock/internal/testenv"
)

// ReleaseMethod answers what lock.Release would do on this server: DELEX
// only where the server has it and lua was not asked for, and a refusal
// naming the version when delex is asked of a server without it.
func TestReleaseMethod(t *testing.T) {
	rdb := testenv.Redis(t)
	delex, err := services.HasDelex(t.Context(), rdb)
	if err != nil {
		t.Fatal(err)
	}
	auto := map[bool]string{true: "delex", false: "lua"}[delex]
	for _, tt := range []struct{ want, got string }{{"auto", auto}, {"lua", "lua"}, {"delex", "delex"}} {
		got, err := services.ReleaseMethod(t.Context(), rdb, tt.want, "7.0.15")
		switch {
		case tt.want == "delex" && !delex:
			if err == nil || !strings.Contains(err.Error(), "Redis 7.0.15") || !strings.Contains(err.Error(), "8.4") {
				t.Errorf("ReleaseMethod(delex) = %q, %v; want an error naming Redis 7.0.15 and 8.4", got, err)
			}
		case err != nil || got != tt.got:
			t.Errorf("ReleaseMethod(%s) = %q, %v; want %q", tt.want, got, err, tt.got)
		}
	}
}
