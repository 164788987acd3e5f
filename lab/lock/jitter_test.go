package lock_test

import (
	"math"
	"testing"
	"time"

	"example.com/walletlock/lab/lock"
)

func TestJitter_staysWithinItsBounds(t *testing.T) {
	tests := []struct {
		name     string
		j        lock.Jitter
		min, max time.Duration
		varies   bool
	}{
		{"acquire's default", lock.Jitter{Min: 5 * time.Millisecond, Max: 15 * time.Millisecond}, 5 * time.Millisecond, 15 * time.Millisecond, true},
		{"a narrow range", lock.Jitter{Min: time.Millisecond, Max: time.Millisecond + 3}, time.Millisecond, time.Millisecond + 3, true},
		{"min equals max", lock.Jitter{Min: 7 * time.Millisecond, Max: 7 * time.Millisecond}, 7 * time.Millisecond, 7 * time.Millisecond, false},
		{"max below min", lock.Jitter{Min: 7 * time.Millisecond, Max: time.Millisecond}, 7 * time.Millisecond, 7 * time.Millisecond, false},
		{"the zero Jitter is acquire's default", lock.Jitter{}, 5 * time.Millisecond, 15 * time.Millisecond, true},
		// redislock reads 0 as "stop retrying", so the floor is 1 ns.
		{"a zero max", lock.Jitter{Min: -1, Max: 0}, 1, 1, false},
		{"negative bounds", lock.Jitter{Min: -time.Second, Max: -time.Millisecond}, 1, 1, false},
		{"a negative min", lock.Jitter{Min: -time.Second, Max: 3}, 1, 3, true},
		{"max below min, both negative", lock.Jitter{Min: -1, Max: -time.Second}, 1, 1, false},
		// Max-Min+1 used to overflow here and make rand.N panic.
		{"max is the largest duration", lock.Jitter{Max: math.MaxInt64}, 1, math.MaxInt64, true},
		{"the widest range", lock.Jitter{Min: math.MinInt64, Max: math.MaxInt64}, 1, math.MaxInt64, true},
		{"min is the largest duration", lock.Jitter{Min: math.MaxInt64, Max: math.MaxInt64}, math.MaxInt64, math.MaxInt64, false},
		{"min is the largest duration, max below", lock.Jitter{Min: math.MaxInt64, Max: 0}, math.MaxInt64, math.MaxInt64, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := map[time.Duration]bool{}
			for range 1000 {
				d := tt.j.NextBackoff()
				if d < tt.min || d > tt.max {
					t.Fatalf("NextBackoff() = %v, want within [%v, %v]", d, tt.min, tt.max)
				}
				seen[d] = true
			}
			if varies := len(seen) > 1; varies != tt.varies {
				t.Errorf("%d distinct values in 1000 draws, want varying: %v", len(seen), tt.varies)
			}
		})
	}
}
