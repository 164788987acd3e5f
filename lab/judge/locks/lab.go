package locks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/judge"
	hlock "example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/lock/fair"
)

// Hardened is the lab's lock (lab/lock): the article's, plus what
// production adds, with the article's signatures.
var Hardened = judge.Article[*hlock.Lock, hlock.Client]{
	Name:          "hardened",
	Acquire:       hlock.Acquire,
	Release:       (*hlock.Lock).Release,
	Refresh:       (*hlock.Lock).Refresh,
	Watch:         (*hlock.Lock).Watch,
	AcquireFenced: hlock.AcquireFenced,
	Fence:         func(l *hlock.Lock) int64 { return l.Fence },
	NotHeld:       hlock.ErrNotHeld,
}.Adapter()

// Fair is the lab's fair lock (lab/lock/fair): waiters queue in Redis and
// a release hands the lease to the first. Its leases are the hardened
// lock's.
var Fair = judge.Adapter{Name: "fair", New: func(addr string) (judge.Lock, error) {
	rdb := client(addr)
	return fairLock{fair.New(rdb), rdb}, nil
}}

type fairLock struct {
	f   *fair.Lock
	rdb *redis.Client
}

func (l fairLock) Acquire(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	return hardenedLease(l.f.Acquire(ctx, key, ttl))
}

func (l fairLock) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	return hardenedLease(l.f.AcquireFenced(ctx, key, ttl))
}

func (l fairLock) Close() error { l.f.Close(); return l.rdb.Close() }

type hLease struct{ l *hlock.Lock }

func hardenedLease(l *hlock.Lock, err error) (judge.Lease, error) {
	if err != nil {
		return nil, err
	}
	return hLease{l}, nil
}

func (h hLease) Release(ctx context.Context) error {
	return notHeld(h.l.Release(ctx), hlock.ErrNotHeld)
}
func (h hLease) Refresh(ctx context.Context, ttl time.Duration) error {
	return notHeld(h.l.Refresh(ctx, ttl), hlock.ErrNotHeld)
}
func (h hLease) Fence() int64 { return h.l.Fence }
func (h hLease) Watch(ctx context.Context, ttl time.Duration) (context.Context, context.CancelFunc) {
	return h.l.Watch(ctx, ttl)
}

// notHeld marks the lock's own "not held" error as judge.ErrNotHeld.
func notHeld(err, lockNotHeld error) error {
	if err != nil && errors.Is(err, lockNotHeld) {
		return fmt.Errorf("%w: %w", judge.ErrNotHeld, err)
	}
	return err
}
