package fencing

import (
	"context"
	"fmt"
	"slices"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
)

// MaxSpenders bounds a row program's -n below harness.MaxN: step 5's phase 3
// hands the lease from spender to spender, about 10 ms each, and must end
// within its hang guard.
const MaxSpenders = 1000

// Flags are what a row program's flags set (step 5 declares them): the
// lease's TTL, how long a stalled holder pauses between its read and its
// write, the work of a spend, the spenders and how many of them stall,
// and -phase.
type Flags struct {
	TTL, Pause, Work time.Duration
	N, Stalls        int
	Phase            string
}

// Run parses args, checks the flags and picks the phases -phase names from
// all (a bad flag: one line and exit 2), then runs them (Rows). It returns
// the exit code.
func (f *Flags) Run(ctx context.Context, p *harness.Program, args []string, all []Phase) int {
	var chosen []Phase
	if code, ok := p.Parse(args, nil, func() (errs []error) { chosen, errs = f.Check(p.WalletID(), all); return errs }); !ok {
		return code
	}
	return Rows(ctx, p, f.Row(chosen), f.Settings(p), chosen)
}

// Check picks the phases -phase names from all, and checks the flags; id
// is the wallet's (-wallet-id).
func (f *Flags) Check(id int64, all []Phase) ([]Phase, []error) {
	chosen, err := harness.ChooseBy("-phase", f.Phase, all, func(p Phase) string { return p.Name })
	switch {
	case err != nil:
	case lock.CheckTTL(f.TTL) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(f.TTL))
	case f.Pause <= f.TTL:
		err = fmt.Errorf("-pause %v must be longer than -ttl %v: a stalled holder must outlive its lease", f.Pause, f.TTL)
	case f.Work < 0 || f.N < 1 || id < 1:
		err = fmt.Errorf("-work must be at least 0, -n and -wallet-id at least 1; got %v, %d and %d", f.Work, f.N, id)
	case f.Stalls < 0 || f.Stalls > f.N:
		err = fmt.Errorf("-stalls must be between 0 and -n (%d), got %d", f.N, f.Stalls)
	}
	return chosen, []error{err, harness.CheckMax("-n", f.N, MaxSpenders), harness.CheckDuration("-ttl", f.TTL),
		harness.CheckDuration("-pause", f.Pause), harness.CheckDuration("-work", f.Work)}
}

// Row is what Rows needs to know of the chosen phases.
func (f *Flags) Row(chosen []Phase) Row {
	return Row{
		NeedRedis: slices.ContainsFunc(chosen, func(p Phase) bool { return !p.NoRedis }),
		TTL:       f.TTL,
		// A phase that runs past a minute beyond its flags' work and stalls
		// has hung. (The flags' bounds keep this from overflowing.)
		Limit:    time.Minute + time.Duration(f.N)*f.Work + time.Duration(f.Stalls)*f.Pause,
		Spenders: f.N,
	}
}

// Settings are the run's "config" in -json.
func (f *Flags) Settings(p *harness.Program) map[string]any {
	return map[string]any{"config": map[string]any{"ttl": f.TTL.String(), "pause": f.Pause.String(), "work": f.Work.String(),
		"spenders": f.N, "stalls": f.Stalls, "wallet_id": p.WalletID(), "prefix": p.Prefix()}}
}
