package harness

// The flags of a lesson whose spenders each hold a lock for their spend,
// and their checks, so that a step names its defaults in one line and
// refuses bad values as the others do: step 2 declares and checks them
// here, step 3 checks them (its usage lines speak of phases), step 4
// declares them (redislockx.Setting checks them).

import (
	"errors"
	"fmt"
	"time"
)

// LockFlags are how many spenders run (-n), the lock's TTL (-ttl), how
// long a spender waits for the lock (-wait, where a step has it) and the
// work between a spend's read and its write (-work).
type LockFlags struct {
	N               int
	TTL, Wait, Work time.Duration

	wait bool // -wait is declared
}

// AddLockFlags declares -n, -ttl, -work and, when def.Wait is above 0,
// -wait, each with def's value as its default. Its checks are Check.
func (p *Program) AddLockFlags(def LockFlags) *LockFlags {
	f := &def
	f.wait = def.Wait > 0
	p.Flags.IntVar(&f.N, "n", def.N, fmt.Sprintf("concurrent spenders, at most %d", MaxN))
	p.Flags.DurationVar(&f.TTL, "ttl", def.TTL, "lock TTL, at least 1ms and at most 1h")
	if f.wait {
		p.Flags.DurationVar(&f.Wait, "wait", def.Wait, "how long each spender waits for the lock, at most 1h")
	}
	p.Flags.DurationVar(&f.Work, "work", def.Work, "time between the read and the write, at most 1h")
	return f
}

// Check returns the flags' errors, nil for those that pass, in the order
// Refuse goes through them: a TTL the lock refuses (validTTL, the lock's
// own check: lock.CheckTTL; the harness does not link the lock), then
// -n under 1, -wait not above 0 or -work under 0 in one line, then the
// bounds (MaxN, MaxDuration), which keep a spender's wait far from
// overflowing a time.Duration.
func (f *LockFlags) Check(validTTL func(time.Duration) error) []error {
	var err error
	switch {
	case validTTL(f.TTL) != nil:
		err = fmt.Errorf("-ttl: %w", validTTL(f.TTL))
	case f.wait && (f.N < 1 || f.Wait <= 0 || f.Work < 0):
		err = errors.New("-n must be at least 1, -wait above 0 and -work at least 0")
	case f.N < 1 || f.Work < 0:
		err = errors.New("-n must be at least 1 and -work at least 0")
	}
	errs := []error{err, CheckMax("-n", f.N, MaxN), CheckDuration("-ttl", f.TTL)}
	if f.wait {
		errs = append(errs, CheckDuration("-wait", f.Wait))
	}
	return append(errs, CheckDuration("-work", f.Work))
}
