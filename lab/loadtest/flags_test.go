package loadtest_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/loadtest"
)

func TestConfig_Resolve(t *testing.T) {
	t.Run("one count sets Workers, a list sets the sweep", func(t *testing.T) {
		one, sweep := loadtest.Defaults(), loadtest.Defaults()
		if err := one.Resolve("8", "lock"); err != nil || one.Workers != 8 || one.Sweep != nil || !slices.Equal(one.Strategies, []string{"lock"}) {
			t.Errorf("Resolve(8, lock) = %v: workers %d, sweep %v, strategies %v", err, one.Workers, one.Sweep, one.Strategies)
		}
		if err := sweep.Resolve("2,8", "all"); err != nil || !slices.Equal(sweep.Sweep, []int{2, 8}) || !slices.Equal(sweep.Strategies, loadtest.Strategies()) {
			t.Errorf("Resolve(2,8, all) = %v: sweep %v, strategies %v", err, sweep.Sweep, sweep.Strategies)
		}
	})
	t.Run("FirstID comes from the prefix unless given", func(t *testing.T) {
		derived, given := loadtest.Defaults(), loadtest.Defaults()
		given.FirstID = 7
		if err := derived.Resolve("8", "all"); err != nil || derived.FirstID != ledger.FirstIDFor(derived.Prefix) {
			t.Errorf("derived FirstID %d (%v), want FirstIDFor(prefix)", derived.FirstID, err)
		}
		if err := given.Resolve("8", "all"); err != nil || given.FirstID != 7 {
			t.Errorf("given FirstID %d (%v), want 7", given.FirstID, err)
		}
	})
	for _, tt := range []struct{ name, workers, strategies string }{
		{"a bad worker count", "many", "all"},
		{"an unknown strategy", "8", "nope"},
		{"a count Validate refuses", "0", "all"},
	} {
		t.Run(tt.name+" is a bad config", func(t *testing.T) {
			c := loadtest.Defaults()
			if err := c.Resolve(tt.workers, tt.strategies); !errors.Is(err, loadtest.ErrBadConfig) {
				t.Errorf("Resolve(%q, %q) = %v, want ErrBadConfig", tt.workers, tt.strategies, err)
			}
		})
	}
}

func TestProgressTo_noBarOffATerminal(t *testing.T) {
	if w := loadtest.ProgressTo(&bytes.Buffer{}); w != nil {
		t.Errorf("ProgressTo(a buffer) = %v, want nil", w)
	}
}
