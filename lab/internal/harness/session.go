package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/services"
)

// ExitInterrupted is the exit status of a program stopped by Ctrl-C, as a
// shell reports a process ended by SIGINT (128 + 2).
const ExitInterrupted = 130

// Session is one run of a program that writes Redis keys under a prefix,
// from its start to its clean-up.
//
// Start takes the prefix's run lease (lease.go), so that a second
// run on the same prefix is refused at once instead of resetting this
// one's keys. Then:
//
//   - Context is for the work. It ends at the first Ctrl-C (when the ctx
//     given to Start ends) or when the lease is lost, with the reason as
//     its cause.
//   - Cleanup gives the context for what follows the work: reading back
//     what was measured and deleting keys. Ctrl-C does not cancel it; it
//     ends CleanupTimeout after it is asked for, or after the Ctrl-C if
//     that came first. So after a Ctrl-C the whole clean-up takes about
//     CleanupTimeout, even with Redis frozen.
//   - Close deletes the run's keys and releases the lease. Keys it could
//     not delete it names in one line, with the command that deletes them.
type Session struct {
	prog, prefix string
	rdb          redis.UniversalClient
	lease        *Lease
	work         context.Context
	stop         context.CancelCauseFunc
	unwatch      func() bool
	ctxErr       func() error // Err of the ctx given to Start
	endedAt      atomic.Int64 // when that ctx ended, Unix nanoseconds; 0 before
}

// Start takes the run lease on prefix for the program prog. Its error is
// one line: when another run holds the prefix, it matches ErrBusy
// and says how to choose another.
func Start(ctx context.Context, rdb redis.UniversalClient, prog, prefix string) (*Session, error) {
	lease, err := TakeLease(ctx, rdb, prefix)
	if err != nil {
		return nil, err
	}
	s := &Session{prog: prog, prefix: prefix, rdb: rdb, lease: lease, ctxErr: ctx.Err}
	context.AfterFunc(ctx, func() { s.endedAt.Store(time.Now().UnixNano()) })
	s.work, s.stop = context.WithCancelCause(ctx)
	s.unwatch = context.AfterFunc(lease.Context(), func() {
		s.stop(fmt.Errorf("lost the run lease on prefix %q: %w", prefix, context.Cause(lease.Context())))
	})
	return s, nil
}

// Context is the work's context; see Session.
func (s *Session) Context() context.Context { return s.work }

// Interrupted reports whether the ctx given to Start has ended: Ctrl-C.
func (s *Session) Interrupted() bool { return s.ctxErr() != nil }

// Cleanup returns the context for reading back results and deleting keys;
// see Session.
func (s *Session) Cleanup() (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(CleanupTimeout)
	if t := s.endedAt.Load(); t != 0 {
		if end := time.Unix(0, t).Add(CleanupTimeout); end.Before(deadline) {
			deadline = end
		}
	}
	return context.WithDeadline(context.WithoutCancel(s.work), deadline)
}

// Close deletes keys, then releases the lease, within a Cleanup context.
// When the keys may be left, it writes one line to stderr that says why
// and gives the command that deletes them. A lease it could not release
// expires by itself within LeaseTTL.
func (s *Session) Close(stderr io.Writer, keys ...string) {
	ctx, cancel := s.Cleanup()
	defer cancel()
	s.unwatch()
	defer s.stop(context.Canceled)
	var delErr error
	if len(keys) > 0 {
		delErr = services.DeleteKeys(ctx, s.rdb, keys...)
	}
	// A release after a timeout waits out lock.ReleaseTimeout of its own:
	// the clean-up does not wait for it past its deadline.
	released := make(chan struct{})
	go func() {
		s.lease.Close(ctx)
		close(released)
	}()
	select {
	case <-released:
	case <-ctx.Done():
	}
	if delErr == nil {
		return
	}
	why := strings.Join(strings.Fields(delErr.Error()), " ")
	if ctx.Err() != nil || errors.Is(delErr, context.DeadlineExceeded) {
		why = fmt.Sprintf("Redis did not answer within the %v clean-up time", CleanupTimeout)
	}
	fmt.Fprintf(stderr, "%s: could not delete the run's keys (%s); they may still be there, delete them with: %s\n",
		s.prog, why, RedisDel(services.OptionsOf(s.rdb), keys...))
}

// Await runs fn and returns its result and true. After Ctrl-C, or when the
// lease is lost, it waits for fn only until the clean-up deadline (see
// Session): a call stuck on a frozen server must not hold the user. It then
// returns the zero T and false, and fn goes on in the background, unseen;
// the caller must not read anything fn writes.
func Await[T any](s *Session, fn func() T) (T, bool) {
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	select {
	case v := <-ch:
		return v, true
	case <-s.work.Done():
	}
	ctx, cancel := s.Cleanup()
	defer cancel()
	select {
	case v := <-ch:
		return v, true
	case <-ctx.Done():
		var zero T
		return zero, false
	}
}
