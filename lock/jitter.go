package lock

import (
	"math/rand/v2"
	"time"
)

// Jitter is a retry wait drawn at random between Min and Max. Waiters that
// all sleep the same fixed interval wake together and collide again; random
// waits spread them out.
//
// It has the NextBackoff method of bsm/redislock's RetryStrategy, so the
// same value serves Acquire and redislock.Options. It keeps no state, so
// one value may be shared between goroutines.
type Jitter struct {
	Min, Max time.Duration
}

// NextBackoff returns a random wait in [Min, Max], and never less than
// 1 ns, which redislock would read as "stop retrying".
func (j Jitter) NextBackoff() time.Duration {
	d := j.Min
	if j.Max > j.Min {
		d += rand.N(j.Max - j.Min + 1)
	}
	return max(d, 1)
}
