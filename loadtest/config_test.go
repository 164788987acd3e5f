package loadtest_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/loadtest"
)

func TestDefaults_areValid(t *testing.T) {
	if err := loadtest.Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestValidate_namesTheBadFlag(t *testing.T) {
	tests := []struct {
		name   string
		change func(c *loadtest.Config)
		want   string
	}{
		{"no wallets", func(c *loadtest.Config) { c.Wallets = 0 }, "-wallets"},
		{"too many wallets", func(c *loadtest.Config) { c.Wallets = loadtest.MaxWallets + 1 }, "-wallets must be at most 1000000"},
		{"too many workers", func(c *loadtest.Config) { c.Workers = loadtest.MaxWorkers + 1 }, "-workers must be at most 10000"},
		{"an endless duration", func(c *loadtest.Config) { c.Duration = 1000000 * time.Hour }, "-duration must be at most 1h"},
		{"an endless timeout", func(c *loadtest.Config) { c.Timeout = 2 * time.Hour }, "-timeout must be at most 1h"},
		{"balances that overflow", func(c *loadtest.Config) { c.Initial, c.Wallets = math.MaxInt64/2+1, 2 }, "-initial"},
		{"negative workers", func(c *loadtest.Config) { c.Workers = -1 }, "-workers"},
		{"no workers", func(c *loadtest.Config) { c.Workers = 0 }, "-workers"},
		{"no duration", func(c *loadtest.Config) { c.Duration = 0 }, "-duration"},
		{"negative duration", func(c *loadtest.Config) { c.Duration = -time.Second }, "-duration"},
		{"negative ops", func(c *loadtest.Config) { c.Ops = -1 }, "-ops"},
		{"negative work", func(c *loadtest.Config) { c.Work = -time.Millisecond }, "-work"},
		{"nothing to spend", func(c *loadtest.Config) { c.Amount = 0 }, "-amount"},
		{"negative balance", func(c *loadtest.Config) { c.Initial = -1 }, "-initial"},
		{"a TTL under 1ms", func(c *loadtest.Config) { c.TTL = time.Microsecond }, "-ttl"},
		{"no timeout", func(c *loadtest.Config) { c.Timeout = 0 }, "-timeout"},
		{"id zero", func(c *loadtest.Config) { c.FirstID = 0 }, "-first-id"},
		{"ids past the end", func(c *loadtest.Config) { c.FirstID = math.MaxInt64 - 3 }, "-first-id"},
		{"no prefix", func(c *loadtest.Config) { c.Prefix = "" }, "-prefix"},
		{"no strategy", func(c *loadtest.Config) { c.Strategies = nil }, "strategy"},
		{"unknown strategy", func(c *loadtest.Config) { c.Strategies = []string{"mutex"} }, `"mutex"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadtest.Defaults()
			tt.change(&c)
			err := c.Validate()
			if !errors.Is(err, loadtest.ErrBadConfig) {
				t.Fatalf("Validate() = %v, want an error matching ErrBadConfig", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("Validate() = %q, want one line naming %s", msg, tt.want)
			}
		})
	}
}

func TestParseStrategies_allOneOrSeveral(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{"all", loadtest.Strategies(), false},
		{"lock", []string{"lock"}, false},
		{"forupdate,none", []string{"forupdate", "none"}, false},
		{"lock, lock", []string{"lock"}, false},
		{"", nil, true},
		{"lock,", nil, true},
		{"mutex", nil, true},
		{"ALL", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := loadtest.ParseStrategies(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("ParseStrategies(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err != nil && !errors.Is(err, loadtest.ErrBadConfig) {
				t.Errorf("ParseStrategies(%q) error %v does not match ErrBadConfig", tt.in, err)
			}
		})
	}
}

func TestStrategies_inTheOrderOfTheLesson(t *testing.T) {
	want := []string{"none", "lock", "redislock", "fenced", "version", "forupdate"}
	if got := loadtest.Strategies(); !slices.Equal(got, want) {
		t.Errorf("Strategies() = %v, want %v", got, want)
	}
}
