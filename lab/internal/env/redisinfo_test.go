package env_test

import (
	"regexp"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
)

func TestParseCommandStats(t *testing.T) {
	info := "# Commandstats\r\n" +
		"cmdstat_get:calls=21,usec=35,usec_per_call=1.67,rejected_calls=0,failed_calls=0\r\n" +
		"cmdstat_evalsha:calls=7,usec=120,usec_per_call=17.14,rejected_calls=0,failed_calls=1\r\n" +
		"cmdstat_client|setinfo:calls=4,usec=4,usec_per_call=1.00,rejected_calls=0,failed_calls=0\r\n"
	got := env.ParseCommandStats(info)
	want := env.CommandStats{"get": 21, "evalsha": 7, "client|setinfo": 4}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %d, want %d", k, got[k], v)
		}
	}
}

func TestCommandStats_Since(t *testing.T) {
	before := env.CommandStats{"get": 10, "info": 5, "hello": 1}
	tests := []struct {
		name  string
		after env.CommandStats
		want  int64
	}{
		{"sums the deltas", env.CommandStats{"get": 15, "evalsha": 3, "info": 5}, 8},
		{"ignores INFO and connection setup", env.CommandStats{"get": 10, "info": 9, "hello": 7, "client|setinfo": 12}, 0},
		{"a reset counter means unknown", env.CommandStats{"get": 2, "evalsha": 3}, -1},
	}
	for _, tt := range tests {
		if got := tt.after.Since(before); got != tt.want {
			t.Errorf("%s: got %d, want %d", tt.name, got, tt.want)
		}
	}
}

var versionRE = regexp.MustCompile(`^\d+(\.\d+)*`)

func TestPostgresVersion(t *testing.T) {
	pool := testenv.Postgres(t)
	v, err := env.PostgresVersion(labtest.Context(t, 10*time.Second), pool)
	if err != nil || !versionRE.MatchString(v) {
		t.Fatalf("PostgresVersion = %q, %v; want a version number", v, err)
	}
	t.Logf("PostgreSQL %s", v)
}

func TestRedisVersion(t *testing.T) {
	rdb := testenv.Redis(t)
	v, err := env.RedisVersion(labtest.Context(t, 10*time.Second), rdb)
	if err != nil || !versionRE.MatchString(v) {
		t.Fatalf("RedisVersion = %q, %v; want a version number", v, err)
	}
	t.Logf("Redis %s", v)
}
