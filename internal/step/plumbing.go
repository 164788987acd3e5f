package step

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"
	"unicode"

	"example.com/walletlock/internal/safe"
)

// label goes before a check line: "phase 2: ", "jitter: ", or "" for a
// step's one phase, named after it (step2-lock's "lock").
func label(step, phase string) string {
	switch {
	case strings.HasSuffix(step, "-"+phase):
		return ""
	case unicode.IsDigit(rune(phase[0])):
		return "phase " + phase + ": "
	}
	return phase + ": "
}

var signalled context.Context   // ended by Ctrl-C, SIGTERM or SIGHUP
var end context.CancelCauseFunc // ends the run: a failed write to stdout calls it

// stopOnSignals returns a context that Ctrl-C, SIGTERM, SIGHUP or a closed
// output ends; after the first signal, a second kills at once.
func stopOnSignals() context.Context {
	var stop context.CancelFunc
	signalled, stop = signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	context.AfterFunc(signalled, stop)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // a write to a closed pipe fails instead of killing
	var ctx context.Context
	ctx, end = context.WithCancelCause(signalled)
	return ctx
}

// say prints a line on stdout; a failed write (a closed pipe, a full
// disk) ends the run.
func say(line string) {
	if _, err := fmt.Println(line); err != nil && end != nil {
		end(fmt.Errorf("stopped: its output could not be written (%w)", err))
	}
}

// clean deletes the run's keys and rows and gives its lease back, within
// 3 s, naming what it could not delete with the command that does.
func (r *Run) clean() {
	if r.giveBack == nil {
		return // no lease, so no keys or rows of its own yet
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var left []string
	for _, k := range r.keys {
		if r.Redis.Del(ctx, k).Err() != nil {
			left = append(left, safe.Quote(k))
		}
	}
	if len(left) > 0 {
		log.Printf("could not delete its keys; delete them with: redis-cli DEL %s", strings.Join(left, " "))
	}
	for _, clean := range r.atEnd {
		if err := clean(ctx); err != nil {
			log.Printf("could not delete its rows (%v); delete them with: psql -c %s", err,
				safe.Quote("DELETE FROM walletlock_wallets WHERE owner = '"+r.Owner+"'"))
		}
	}
	r.giveBack(ctx)
}

// checkFlags exits 2 on arguments after the flags, a -prefix of other
// characters, a count outside 1 to 10000 or a duration outside 1ms to 1h.
func checkFlags() {
	problems := 0
	bad := func(format string, args ...any) { log.Printf(format, args...); problems++ }
	if flag.NArg() > 0 {
		bad("no arguments follow the flags, got %s", safe.Quote(flag.Arg(0)))
	}
	flag.VisitAll(func(f *flag.Flag) {
		switch v := f.Value.(flag.Getter).Get().(type) {
		case string:
			if f.Name == "prefix" && !regexp.MustCompile(`^[\w:.-]*$`).MatchString(v) {
				bad("-prefix takes letters, digits and :_.- only, not %s", safe.Quote(v))
			}
		case int:
			if v < 1 || v > 10000 {
				bad("-%s must be from 1 to 10000, not %d", f.Name, v)
			}
		case time.Duration:
			if v < time.Millisecond || v > time.Hour {
				bad("-%s must be from 1ms to 1h, not %v", f.Name, v)
			}
		}
	})
	if problems > 0 {
		flag.Usage()
		os.Exit(2)
	}
}
