package harness

// This file runs a program's spenders as operating-system processes
// instead of goroutines of one process, for the -procs flag of steps 1
// and 2: the spenders then share nothing but the servers, as the servers
// of a real application would.
//
// A program adds -procs with Program.WithProcs; Run.Hammer then runs the
// spenders (spenders.run). With -procs 1 they are goroutines of this
// process. With more, the program's own binary (os.Executable) is started
// that many times, with the same flags and the environment variable
// procsEnv set to the number of spenders that copy runs. A copy notices
// (Child), and Program.Spenders has it serve instead of doing a run of its
// own: the parent alone takes the run lease, resets the balance and judges
// the tally.
//
// Between the two, on the copy's stdin and stdout:
//
//	copy:   {"ready":true}                   connected, waiting for the start
//	parent: go                               sent to every copy at once
//	copy:   {"accepted":3,"refused":9,...}   its tally, as one JSON line
//
// Under go test the binary is the test binary, so the package's TestMain
// must send a copy to the program's run function:
//
//	func TestMain(m *testing.M) {
//		if harness.Child() {
//			harness.Main(run)
//		}
//		os.Exit(m.Run())
//	}

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// procsEnv marks a process as one of the -procs copies; it holds how many
// spenders the copy runs.
const procsEnv = "WALLETLOCK_SPENDERS"

// MaxProcs bounds -procs: many times a laptop's cores, and few enough that they
// all start within a second or so.
const MaxProcs = 64

// killAfter is how long a copy has, after the interrupt that run forwards
// when its ctx ends, to send its tally before it is killed. It is well
// inside CleanupTimeout, so that the program still has time to read
// back the balance and delete its keys.
const killAfter = time.Second

// readyTimeout bounds how long run waits for its copies to connect; each
// gives up on its own after services.ConnectTimeout.
const readyTimeout = 30 * time.Second

// CheckProcs refuses a -procs flag outside 1..MaxProcs or above n, the spenders to
// share out; on a system without process groups, anything above 1.
func CheckProcs(procs, n int) error {
	if procs < 1 || procs > MaxProcs || procs > n {
		return fmt.Errorf("-procs must be between 1 and %d and at most -n (%d), got %d", MaxProcs, n, procs)
	}
	if procs > 1 && errNoCopies != nil {
		return errNoCopies
	}
	return nil
}

// spenders says how a program runs its spenders.
type spenders struct {
	N      int       // how many spenders
	Procs  int       // in how many processes: 1 (or less) runs them as goroutines of this one
	Args   []string  // the program's flags, given to every copy
	Stderr io.Writer // where the copies' stderr goes: a panic, a race report

	// Spend is one spender, as the goroutines of wallet.Hammer run it.
	Spend func(ctx context.Context, i int) (bool, error)

	// Also, if not nil, collects errors beside the spends' own (step 2's
	// failed releases). A copy sends its own to Run with its tally.
	Also *Errors

	// History, if not nil, is where Spend records each spend (history.go).
	// A copy sends its spends with its tally; run adds them.
	History *history.Recorder
}

// run runs the spenders and returns their tally, as wallet.Hammer does.
//
// With Procs above 1, a copy that fails before the start counts every
// spend as failed (no copy starts then); a copy that ends without its
// tally counts each of its spends as an unknown outcome, since it may have
// written. When ctx ends, run forwards an interrupt to each copy, as
// Ctrl-C would, takes the tallies that come within KillAfter and kills the
// rest. It signals no process but its copies, each in a process group of
// its own.
func (sp spenders) run(ctx context.Context) wallet.Tally {
	if sp.Procs <= 1 {
		return wallet.Hammer(sp.N, func(i int) (bool, error) { return sp.Spend(ctx, i) })
	}
	if ctx.Err() != nil {
		return failed(sp.N, context.Cause(ctx))
	}
	return sp.runCopies(ctx)
}

// Child reports whether this process is one of the -procs copies of a
// program; its TestMain then hands it to the program's run (see above).
func Child() bool {
	_, ok := os.LookupEnv(procsEnv)
	return ok
}

// serve is what a copy does instead of the program's own run: it says it
// is ready, waits for the start line on stdin, runs its share of the
// spenders as goroutines and writes their tally to stdout. It returns the
// exit code. ctx is the program's: its end (the interrupt that run
// forwards) ends the spends.
func (sp spenders) serve(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer, share string) int {
	n, err := strconv.Atoi(share)
	if err != nil || n < 1 || n > MaxN {
		fmt.Fprintf(stderr, "procs: %s=%q is not a number of spenders; this process is meant to be started by a program's -procs\n", procsEnv, share)
		return 2
	}
	enc := json.NewEncoder(stdout)
	if err := enc.Encode(struct {
		Ready bool `json:"ready"`
	}{true}); err != nil {
		return 1
	}
	start := make(chan bool, 1)
	go func() {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		start <- err == nil && line == "go\n"
	}()
	select {
	case ok := <-start:
		if !ok { // the parent gave up before the start: nothing was spent
			return 1
		}
	case <-ctx.Done():
		return ExitInterrupted
	}
	t := wallet.Hammer(n, func(i int) (bool, error) { return sp.Spend(ctx, i) })
	r := copyTally{Accepted: t.Accepted, Refused: t.Refused, Unknown: t.Unknown, Errors: messages(t.Errors)}
	if sp.Also != nil {
		r.Also = messages(sp.Also.List())
	}
	for _, op := range sp.History.Ops() {
		if op.Result != history.Set && op.Result != history.Read { // the parent has its own
			r.Ops = append(r.Ops, op)
		}
	}
	if err := enc.Encode(r); err != nil {
		return 1
	}
	return 0
}

// copyTally is one line a copy writes on stdout: first {"ready":true}, then
// its tally. Errors are the messages of every spend's error, unknown
// outcomes included, as in wallet.Tally.
type copyTally struct {
	Ready    bool     `json:"ready,omitempty"`
	Accepted int      `json:"accepted"`
	Refused  int      `json:"refused"`
	Unknown  int      `json:"unknown"`
	Errors   []string `json:"errors,omitempty"`
	Also     []string `json:"also,omitempty"`
	// Ops are its spends as it recorded them, timed on history.Now's
	// clock, which every process on the machine shares.
	Ops []history.Op `json:"ops,omitempty"`
}

// add counts a copy's tally into t, and its other errors into also.
func (r copyTally) add(t *wallet.Tally, also *Errors) {
	t.Accepted += r.Accepted
	t.Refused += r.Refused
	t.Unknown += r.Unknown
	for _, msg := range r.Errors {
		t.Errors = append(t.Errors, errors.New(msg))
	}
	for _, msg := range r.Also {
		also.Add(errors.New(msg))
	}
}

// failed is the tally of n spends that never started, all for err.
func failed(n int, err error) wallet.Tally {
	t := wallet.Tally{Errors: make([]error, n)}
	for i := range t.Errors {
		t.Errors[i] = err
	}
	return t
}

func messages(errs []error) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		out[i] = err.Error()
	}
	return out
}
