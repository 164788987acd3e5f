// Package core is the seam between package lock and package lock/fair:
// what both need and neither exports.
//
// The fair lock hands out the same *lock.Lock as lock.Acquire, released
// by a hand-off script of its own, and it sends its scripts once, as a
// release does. Go lets two packages share unexported code only through a
// third, and an internal one keeps that code out of every other
// importer's reach, so lock's exported API does not grow for fair's sake:
//
//   - lock.Lock stays a type of package lock, documented there with its
//     methods (an alias of a type defined here would hide them from go
//     doc), and keeps its token to itself.
//   - What needs nothing of lock lives here: sending a command once
//     (once.go), and Handoff, the release a fair lock gives its locks.
//   - What needs lock's unexported fields or its sentinel errors, lock
//     lends through Lend, which it fills in when it is loaded. Package
//     fair imports lock, so Lend is set before any of fair's code runs.
package core

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Handoff is how a lock that a fair lock handed out is released: by the
// fair lock's script, which passes the lock to the next waiter, instead
// of a plain compare-and-delete. lock.Lock's Release, ReleaseLua and
// ReleaseAfter call it.
type Handoff interface {
	// Release runs the hand-off for token, sent once and resent by
	// Release itself after a lost reply, bounded as lock.Release is. It
	// returns what lock.Release returns.
	Release(ctx context.Context, token string) error
	// Queue queues the hand-off for token in p, sent once (see Send),
	// for ReleaseAfter. The command's reply is 1 when the lock was
	// token's, 0 otherwise.
	Queue(ctx context.Context, p redis.Pipeliner, token string) *redis.Cmd
}

// Lend is what package lock lends package fair. Its funcs take and
// return any where a type of lock's would go (lock.Client, *lock.Lock),
// since this package cannot import lock; fair passes a lock.Client and
// asserts the *lock.Lock it gets back.
var Lend struct {
	// NewLock returns the *lock.Lock of a lease on key that token holds
	// on rdb (a lock.Client) for ttl, taken after attempts tries, with
	// fence (0 for none), released through h.
	NewLock func(rdb any, key, token string, ttl time.Duration, attempts int, fence int64, h Handoff) any

	// Check refuses, before anything talks to Redis, what lock.Acquire
	// refuses (with the same errors), and returns ttl rounded up to
	// whole milliseconds, as Acquire sends it.
	Check func(rdb any, key string, ttl time.Duration) (time.Duration, error)

	// FenceRefusal turns what a script answers when it refuses to take
	// a fenced lock, {what, detail} (see lock/acquire_fenced.lua), into
	// the error lock.AcquireFenced returns for it.
	FenceRefusal func(key string, reply []any) error
}
