package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// CleanupTimeout bounds what a program does after the first Ctrl-C: read
// back what was measured and delete its keys and rows. A frozen service
// must not hold the user hostage.
const CleanupTimeout = 3 * time.Second

// Main runs a program's run function with a context that the first Ctrl-C
// (SIGINT, or SIGTERM) cancels, and exits with its code. The first signal
// lets run stop its work, print what it measured and clean up; after it,
// the signals are back to their defaults, so a second Ctrl-C ends the
// process at once.
func Main(run func(ctx context.Context, args []string, stdout, stderr io.Writer) int) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		// The defaults come back before run hears of the first signal, so
		// that a second one ends the process however soon it comes.
		signal.Stop(sigs)
		cancel()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Cleanup returns a context for the work that follows the run's end:
// it keeps ctx's values but not its cancellation (Ctrl-C must not stop the
// clean-up), and ends after CleanupTimeout.
func Cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), CleanupTimeout)
}
