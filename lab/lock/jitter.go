package lock

import (
	"math/rand/v2"
	"time"
)

// Jitter is a retry wait drawn at random between Min and Max: waiters that
// all sleep the same fixed interval wake together and collide again. The
// zero Jitter waits 5 to 15 ms, as Acquire does between attempts. It is a
// bsm/redislock RetryStrategy too, and keeps no state, so one value may
// be shared between goroutines.
type Jitter struct {
	Min, Max time.Duration
}

// NextBackoff returns a random wait in [Min, Max], never less than 1 ns,
// which redislock would read as "stop retrying"; a Max below Min counts
// as Min.
func (j Jitter) NextBackoff() time.Duration {
	if j == (Jitter{}) {
		j = Jitter{Min: 5 * time.Millisecond, Max: 15 * time.Millisecond}
	}
	lo := max(j.Min, 1)
	hi := max(j.Max, lo)
	if hi == lo {
		return lo
	}
	// hi-lo < math.MaxInt64 since lo >= 1, so the +1 cannot overflow.
	return lo + rand.N(hi-lo+1)
}
