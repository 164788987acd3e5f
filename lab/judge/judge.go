// Package judge runs a Redis lock through the article's properties,
// chapter by chapter, and says in plain words what broke and the likely
// fix. It is a kit, called from a lock's own test the way
// testing/fstest.TestFS is:
//
//	func TestJudge(t *testing.T) { judge.Test(t, adapter) }
//
// The chapters have names: lease (the article's step 2: one holder at a
// time, a killed holder's lease frees, a release or a refresh touches only
// its own lease, a lost reply is an unknown outcome, a bad TTL is refused,
// a wait is bounded), watchdog (step 3), fencing (step 5: fences grow, and
// PostgreSQL refuses a stale holder's write), faults (Redis restarted with
// and without its data, a Sentinel failover, a network partition) and
// guards (what production adds).
//
// Every call to the lock runs in a holder process that speaks the holder
// protocol (JSON lines on stdin and stdout; docs/judge.md), and every
// command it sends passes through a RESP-aware proxy of the judge's own in
// front of a redis-server of the judge's own. So the judge sees the wire,
// not the client: it counts the commands an operation sends, and stops a
// holder after any one of them, holds a reply back, loses it, or kills the
// holder, for a lock on go-redis, rueidis, redigo or a holder written in
// another language alike. For each operation (Acquire, Release, Refresh,
// AcquireFenced, a watchdog's refresh) it first learns the commands the
// operation sends, then runs the chapter's scenario again with the holder
// stopped at every boundary between two of them, and with every reply held
// back, past the lease's TTL: a check-then-act written as two commands
// breaks there, on purpose, not by luck.
//
// A Go lock sits behind an Adapter of a few lines (Article writes it for a
// package with the article's API); what it does not offer is "not
// claimed", never a pass. The seed picks the schedule, and the same seed
// replays it.
package judge

import (
	"context"
	"errors"
	"time"
)

// Lock is the lock under judgement: Acquire takes a lease on key for ttl,
// waiting while someone else holds it, until ctx ends.
type Lock interface {
	Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error)
}

// Lease is what Acquire returned. Release gives it back. Refresh sets its
// TTL to ttl again while it is still this lease's; a lock without a
// refresh returns ErrNotClaimed. Both return an error matching ErrNotHeld
// when the lock answered that the lease was gone (expired, or another's),
// and any other error when it cannot tell.
type Lease interface {
	Release(ctx context.Context) error
	Refresh(ctx context.Context, ttl time.Duration) error
}

// Watcher is a Lease with a watchdog: Watch keeps the lease alive while
// the work runs, and cancels the context it returns as soon as the lease
// is lost; stop ends the watchdog.
type Watcher interface {
	Watch(ctx context.Context, ttl time.Duration) (work context.Context, stop context.CancelFunc)
}

// Fencer is a Lease with a fencing token: a number that grows with every
// lease granted on the key, for the database to check.
type Fencer interface {
	Fence() int64
}

// FencedLock is a Lock that hands out fencing tokens: AcquireFenced returns
// a Lease that is a Fencer.
type FencedLock interface {
	AcquireFenced(ctx context.Context, key string, ttl time.Duration) (Lease, error)
}

var (
	// ErrNotHeld is what an adapter wraps the lock's own "not held"
	// answer in (errors.Is), so that the judge can tell that answer from
	// a lost reply.
	ErrNotHeld = errors.New("judge: not held")

	// ErrNotClaimed is what a Lease's Refresh returns when the lock has
	// no refresh.
	ErrNotClaimed = errors.New("judge: not claimed by this lock")
)

// Adapter names a lock and says how to make it: New for a lock written in
// Go, Command for a holder in any language.
type Adapter struct {
	Name string

	// New makes the lock on the Redis at addr ("host:port"), in every
	// holder process the judge starts (the test binary, or the program
	// that called Main, started again).
	New func(addr string) (Lock, error)

	// Command, instead of New, is a holder program: the judge starts it
	// with JUDGE_REDIS_ADDR set to its Redis and speaks the holder
	// protocol with it on its stdin and stdout (docs/judge.md).
	Command []string

	// ServerArgs go on the command line of the redis-server the judge
	// restarts (the restart checks): "--appendonly", "no", say, to judge
	// the lock on a Redis that forgets.
	ServerArgs []string
}

// Options say what to judge and how. The zero Options judge the chapters
// lease, watchdog and fencing, and the faults that take seconds, with a
// fresh seed.
type Options struct {
	// Chapters to judge, by name: "lease", "watchdog", "fencing",
	// "faults", "guards". The faults that take a minute (a Sentinel
	// failover, a partition) and the guards run only when named here.
	Chapters []string

	// Only judges these properties, by id, within the chapters.
	Only []string

	// Seed picks the schedule; the same seed replays it. 0 draws one,
	// and the judge says which.
	Seed int64

	// Page, when set, is an HTML file the judge writes every check's
	// timeline to.
	Page string

	// Database is the PostgreSQL URL for the fencing chapter's wallets;
	// empty reads DATABASE_URL, as the article's programs do.
	Database string
}
