package harness

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"example.com/walletlock/lab/internal/env"
)

// ExitInterrupted is the exit status of a program stopped by Ctrl-C, as a
// shell reports a process ended by SIGINT (128 + 2).
const ExitInterrupted = 130

// CleanupTimeout bounds what a program does after the first Ctrl-C: read
// back what was measured and delete its keys and rows. A frozen service
// must not hold the user hostage.
const CleanupTimeout = 3 * time.Second

// stops are the signals that end a run the way Ctrl-C does: a kill from
// a supervisor (SIGTERM) and a closed terminal (SIGHUP) leave the same
// clean machine behind.
var stops = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// ErrStdoutClosed is the cause of the context Main gives run when stdout
// or stderr is a pipe whose reader has gone (`| head -2`).
var ErrStdoutClosed = errors.New("its output was closed")

// Main runs a program's run function with a context that the first Ctrl-C
// cancels, and exits with its code. SIGTERM, SIGHUP and a write to a
// closed stdout or stderr cancel it the same way: run stops its work,
// prints what it measured and cleans up; a second Ctrl-C ends the process
// at once. Why(ctx) names what ended it. SIGPIPE never kills the process
// (by default Go dies of it before any clean-up): the write fails
// instead. And go-redis logs nothing of its own (env.Quiet).
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	env.Quiet()
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, stops...)
	// Notify, not Ignore: an ignored signal stays ignored in the processes
	// a program starts, a notified one does not. This channel is never
	// read; a full channel drops the signal.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	var once sync.Once
	end := func(cause error) {
		once.Do(func() {
			// The defaults come back before run hears of the first
			// signal: a second one ends the process however soon.
			signal.Stop(sigs)
			cancel(cause)
		})
	}
	go func() {
		if sig, ok := <-sigs; ok {
			end(signalError{sig})
		}
	}()
	stdout := &endOnError{w: os.Stdout, end: end}
	stderr := &endOnError{w: os.Stderr, end: end}
	os.Exit(run(ctx, os.Args[1:], stdout, stderr))
}

// Why names what ended ctx, a context from Main, for the line a program
// prints after it: "Ctrl-C", "SIGTERM", "SIGHUP" or "a closed output".
// For any other context it says "Ctrl-C", the usual reason.
func Why(ctx context.Context) string {
	cause := context.Cause(ctx)
	if sig, ok := errors.AsType[signalError](cause); ok {
		return sig.Error()
	}
	if errors.Is(cause, ErrStdoutClosed) {
		return "a closed output"
	}
	return "Ctrl-C"
}

// signalError is the cause of a context that a signal cancelled.
type signalError struct{ s os.Signal }

func (e signalError) Error() string {
	switch e.s {
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	}
	return "Ctrl-C"
}

// endOnError writes to w until a write fails, which ends the run (a reader
// that closed the pipe will read nothing more); later writes fail at once.
type endOnError struct {
	mu     sync.Mutex
	w      io.Writer
	end    func(error)
	failed error
}

func (e *endOnError) Write(p []byte) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed != nil {
		return 0, e.failed
	}
	n, err := e.w.Write(p)
	if err != nil {
		e.failed = err
		e.end(ErrStdoutClosed)
	}
	return n, err
}

// Cleanup returns a context for the work that follows the run's end:
// it keeps ctx's values but not its cancellation (Ctrl-C must not stop the
// clean-up), and ends after CleanupTimeout.
func Cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}
