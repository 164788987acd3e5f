package lock

import (
	"math/rand/v2"
	"time"
)

// Jitter is a retry wait drawn at random between Min and Max. Waiters that
// all sleep the same fixed interval wake together and collide again; random
// waits spread them out.
//
// The zero Jitter waits 5 to 15 ms, as Acquire does between attempts:
// long enough for a holder to finish a short critical section, short
// enough that a waiter notices a release soon.
//
// It has the NextBackoff method of bsm/redislock's RetryStrategy, so the
// same value serves Acquire and redislock.Options. It keeps no state, so
// one value may be shared between goroutines.
type Jitter struct {
	Min, Max time.Duration
}

// NextBackoff returns a random wait in [Min, Max] (5 to 15 ms for the zero
// Jitter), and never less than 1 ns, which redislock would read as "stop
// retrying". A bound under 1 ns counts as 1 ns, and a Max below Min as Min. Any bounds are safe, up to
// math.MaxInt64.
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
