package loadtest

import (
	"context"
	"errors"
	"io"
	"os"
	"slices"

	"golang.org/x/term"

	"example.com/walletlock/internal/redlock"
)

// Resolve completes c from the two flags that are not plain fields,
// -workers (one count, or a list of counts for a contention sweep) and
// -strategy, gives c the first wallet id of its prefix when FirstID is 0
// (FirstIDFor), and validates it. Its error matches ErrBadConfig.
func (c *Config) Resolve(workers, strategies string) error {
	if c.FirstID == 0 {
		c.FirstID = FirstIDFor(c.Prefix)
	}
	counts, err := ParseWorkers(workers)
	if err != nil {
		return err
	}
	if len(counts) > 1 {
		c.Sweep = counts
	} else {
		c.Workers = counts[0]
	}
	if c.Strategies, err = ParseStrategies(strategies); err != nil {
		return err
	}
	return c.Validate()
}

// ProgressTo returns w when it is a terminal, for Config.Progress, and nil
// otherwise: a progress bar only where someone watches, never in a pipe or
// a file.
func ProgressTo(w io.Writer) io.Writer {
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return w
	}
	return nil
}

// DialLeavingOut is Dial, except that when leaveOut is true and
// redlock's nodes do not answer (redlock.ErrNodesDown) it takes Redlock
// out of c.Strategies and dials again: those nodes come from `make
// redlock-up`, not `make up`, so a default run goes on without them. It
// returns what it left out, with why.
func DialLeavingOut(ctx context.Context, c *Config, leaveOut bool) (*Env, map[string]string, error) {
	env, err := Dial(ctx, *c)
	if !leaveOut || !errors.Is(err, redlock.ErrNodesDown) {
		return env, nil, err
	}
	leftOut := map[string]string{Redlock: err.Error()}
	c.Strategies = slices.DeleteFunc(c.Strategies, func(s string) bool { return s == Redlock })
	env, err = Dial(ctx, *c)
	return env, leftOut, err
}
