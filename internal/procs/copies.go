package procs

import (
	"context"
	"io"

	"example.com/walletlock/wallet"
)

// Copies is how the harness runs spenders for -procs without importing
// this package (which imports it): a program passes Copies{} to
// harness.Program.WithProcs.
type Copies struct{}

// Max is Max; Check, Child as the functions of those names.
func (Copies) Max() int                 { return Max }
func (Copies) Check(procs, n int) error { return Check(procs, n) }
func (Copies) Child() bool              { return Child() }

// Run is Spenders.Run, and Serve Spenders.Serve, for n spenders in procs
// processes; also collects the errors beside the spends' own.
func (Copies) Run(ctx context.Context, n, procs int, args []string, stderr io.Writer, also *Errors, spend func(context.Context) (bool, error)) wallet.Tally {
	return spenders(n, procs, args, stderr, also, spend).Run(ctx)
}

func (Copies) Serve(ctx context.Context, n int, args []string, stdout, stderr io.Writer, also *Errors, spend func(context.Context) (bool, error)) int {
	return spenders(n, 0, args, stderr, also, spend).Serve(ctx, stdout, stderr)
}

func spenders(n, procs int, args []string, stderr io.Writer, also *Errors, spend func(context.Context) (bool, error)) Spenders {
	return Spenders{N: n, Procs: procs, Args: args, Stderr: stderr, Also: also,
		Spend: func(ctx context.Context, _ int) (bool, error) { return spend(ctx) }}
}
