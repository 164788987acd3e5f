package loadtest_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/loadtest"
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
		{"so much that the check leaves an int64", func(c *loadtest.Config) { c.Amount = 1 << 62 }, "-amount must be at most"},
		{"negative balance", func(c *loadtest.Config) { c.Initial = -1 }, "-initial"},
		{"a TTL under 1ms", func(c *loadtest.Config) { c.TTL = time.Microsecond }, "-ttl"},
		{"no timeout", func(c *loadtest.Config) { c.Timeout = 0 }, "-timeout"},
		{"id zero", func(c *loadtest.Config) { c.FirstID = 0 }, "-first-id"},
		{"ids past the end", func(c *loadtest.Config) { c.FirstID = math.MaxInt64 - 3 }, "-first-id"},
		{"no prefix", func(c *loadtest.Config) { c.Prefix = "" }, "-prefix"},
		{"no strategy", func(c *loadtest.Config) { c.Strategies = nil }, "strategy"},
		{"a sweep with no workers at one level", func(c *loadtest.Config) { c.Sweep = []int{2, 0, 8} }, "-workers must be at least 1, got 0"},
		{"a sweep past the bound", func(c *loadtest.Config) { c.Sweep = []int{2, loadtest.MaxWorkers + 1} }, "-workers must be at most 10000"},
		{"a sweep of too many levels", func(c *loadtest.Config) { c.Sweep = []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11} }, "-workers lists 11 counts, at most 10"},
		{"unknown strategy", func(c *loadtest.Config) { c.Strategies = []string{"mutex"} }, `"mutex"`},
		{"a negative pool", func(c *loadtest.Config) { c.Pool = -1 }, "-pool must be 0 (sized to the workers) or 1 to 1024"},
		{"a pool past the bound", func(c *loadtest.Config) { c.Pool = loadtest.MaxPool + 1 }, "-pool must be 0"},
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

func TestParseWorkers_oneCountOrAList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"64", []int{64}, false},
		{"2,8,50", []int{2, 8, 50}, false},
		{" 2, 8 ", []int{2, 8}, false},
		{"8,2,8", []int{8, 2}, false}, // a count given twice runs once
		{"0", []int{0}, false},        // a number: Validate refuses it
		{"", nil, true},
		{"2,,8", nil, true},
		{"2,8,", nil, true},
		{"many", nil, true},
		{"2;8", nil, true},
		{"1.5", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := loadtest.ParseWorkers(tt.in)
			if (err != nil) != tt.wantErr || !slices.Equal(got, tt.want) {
				t.Errorf("ParseWorkers(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err != nil && (!errors.Is(err, loadtest.ErrBadConfig) || !strings.Contains(err.Error(), "-workers")) {
				t.Errorf("ParseWorkers(%q) error %v does not match ErrBadConfig or name -workers", tt.in, err)
			}
		})
	}
}

func TestConfig_levels(t *testing.T) {
	c := loadtest.Defaults()
	if got := c.Levels(); !slices.Equal(got, []int{c.Workers}) {
		t.Errorf("Levels() without a sweep = %v, want [%d]", got, c.Workers)
	}
	c.Sweep = []int{2, 8, 50}
	if got := c.Levels(); !slices.Equal(got, c.Sweep) {
		t.Errorf("Levels() of a sweep = %v, want %v", got, c.Sweep)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Validate() of a sweep: %v", err)
	}
}

func TestStrategies_inTheOrderOfTheLesson(t *testing.T) {
	want := []string{"none", "lock", "redislock", "redsync", "redlock", "fair", "fenced", "atomic", "version", "forupdate"}
	if got := loadtest.Strategies(); !slices.Equal(got, want) {
		t.Errorf("Strategies() = %v, want %v", got, want)
	}
}

func TestConfig_poolsSizedToTheWorkersOrByPool(t *testing.T) {
	tests := []struct {
		name                 string
		workers, pool        int
		wantRedis, wantPostg int
	}{
		{"the default", 64, 0, 64, 50},
		{"a few workers", 6, 0, 6, 6},
		{"10,000 workers", 10000, 0, loadtest.MaxRedisConns, loadtest.MaxPostgresConns},
		{"-pool raises Redis's, PostgreSQL's stays capped", 10000, 1024, 1024, loadtest.MaxPostgresConns},
		{"-pool lowers both", 64, 8, 8, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := loadtest.Defaults()
			c.Workers, c.Pool = tt.workers, tt.pool
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			if got, got2 := c.RedisPool(), c.PostgresPool(); got != tt.wantRedis || got2 != tt.wantPostg {
				t.Errorf("RedisPool, PostgresPool = %d, %d; want %d, %d", got, got2, tt.wantRedis, tt.wantPostg)
			}
		})
	}
}
