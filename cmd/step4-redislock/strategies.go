package main

import (
	"slices"
	"time"

	"github.com/bsm/redislock"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/redislockx"
	"example.com/walletlock/lock"
)

// The strategies compared. lockstep and jitter both wait 10 ms on average,
// so only the randomness differs; a hold lasts about 3 ms, so a waiter that
// sleeps past a release leaves the lock idle. exponential's floor is the
// one redislock's docs advise, its cap four floors: larger caps only wait
// longer.
var strategies = []redislockx.Strategy{
	{Name: "lockstep", Retry: "LinearBackoff(10ms)", Fresh: func() redislock.RetryStrategy { return redislock.LinearBackoff(10 * time.Millisecond) }},
	{Name: "exponential", Retry: "ExponentialBackoff(16ms, 64ms)", Fresh: func() redislock.RetryStrategy {
		return redislock.ExponentialBackoff(16*time.Millisecond, 64*time.Millisecond)
	}},
	{Name: "jitter", Retry: "lock.Jitter{5ms, 15ms}", Fresh: func() redislock.RetryStrategy { return lock.Jitter{} }}, // redislock has no random wait
}

// pick returns the strategies -strategy names (harness.Pick).
func pick(value string) ([]redislockx.Strategy, error) {
	names := make([]string, len(strategies))
	for i, s := range strategies {
		names[i] = s.Name
	}
	picked, err := harness.Pick("-strategy", value, names)
	return slices.DeleteFunc(slices.Clone(strategies), func(s redislockx.Strategy) bool { return !slices.Contains(picked, s.Name) }), err
}

// choose is pick for the harness's checks of the flags: it sets chosen,
// and checks c too.
func choose(chosen *[]redislockx.Strategy, value string, c redislockx.Setting) []error {
	var err error
	*chosen, err = pick(value)
	return []error{err, c.Check()}
}
