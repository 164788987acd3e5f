package judge

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Article is the adapter of a lock with the article's API, the root's
// lock/ and a learner's own: L is its lease (*lock.Lock), C the client
// type Acquire takes (lock.Client). Set the functions the package has; a
// nil one is not claimed, and its properties say so.
//
//	judge.Article[*lock.Lock, lock.Client]{Name: "mine",
//		Acquire: lock.Acquire, Release: (*lock.Lock).Release}.Adapter()
type Article[L any, C any] struct {
	Name          string
	Acquire       func(ctx context.Context, rdb C, key string, ttl time.Duration) (L, error)
	Release       func(l L, ctx context.Context) error
	Refresh       func(l L, ctx context.Context, ttl time.Duration) error
	Watch         func(l L, ctx context.Context, ttl time.Duration) (context.Context, context.CancelFunc)
	AcquireFenced func(ctx context.Context, rdb C, key, fenceKey string, ttl time.Duration) (L, error)
	Fence         func(l L) int64 // the lease's fence (l.Fence)
	NotHeld       error           // the lock's "not held" error (lock.ErrNotHeld), if it has one
}

// Adapter returns the adapter the judge takes.
func (a Article[L, C]) Adapter() Adapter {
	return Adapter{Name: a.Name, New: func(r Redis) (Lock, error) {
		rdb, ok := any(r.Client()).(C)
		if !ok {
			var c C
			return nil, fmt.Errorf("judge: a *redis.Client is not the client %T that Acquire takes", c)
		}
		l := articleLock[L, C]{a: &a, rdb: rdb}
		if a.AcquireFenced != nil && a.Fence != nil {
			return articleFenced[L, C]{l}, nil
		}
		return l, nil
	}}
}

type articleLock[L, C any] struct {
	a   *Article[L, C]
	rdb C
}

func (l articleLock[L, C]) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x, err := l.a.Acquire(ctx, l.rdb, key, ttl)
	if err != nil {
		return nil, l.a.wrap(err)
	}
	lease := articleLease[L, C]{a: l.a, l: x}
	if l.a.Watch != nil {
		return articleWatched[L, C]{lease}, nil
	}
	return lease, nil
}

func (l articleLock[L, C]) Close() error {
	if c, ok := any(l.rdb).(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

type articleFenced[L, C any] struct{ articleLock[L, C] }

func (l articleFenced[L, C]) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x, err := l.a.AcquireFenced(ctx, l.rdb, key, key+":fence", ttl)
	if err != nil {
		return nil, l.a.wrap(err)
	}
	return articleFencedLease[L, C]{articleLease[L, C]{a: l.a, l: x}}, nil
}

type articleLease[L, C any] struct {
	a *Article[L, C]
	l L
}

func (l articleLease[L, C]) Release(ctx context.Context) error {
	return l.a.wrap(l.a.Release(l.l, ctx))
}

func (l articleLease[L, C]) Refresh(ctx context.Context, ttl time.Duration) error {
	if l.a.Refresh == nil {
		return ErrNotClaimed
	}
	return l.a.wrap(l.a.Refresh(l.l, ctx, ttl))
}

type articleWatched[L, C any] struct{ articleLease[L, C] }

func (l articleWatched[L, C]) Watch(ctx context.Context, ttl time.Duration) (context.Context, context.CancelFunc) {
	return l.a.Watch(l.l, ctx, ttl)
}

type articleFencedLease[L, C any] struct{ articleLease[L, C] }

func (l articleFencedLease[L, C]) Fence() int64 { return l.a.Fence(l.l) }

// wrap marks the lock's "not held" as ErrNotHeld.
func (a *Article[L, C]) wrap(err error) error {
	if err != nil && a.NotHeld != nil && errors.Is(err, a.NotHeld) {
		return fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	return err
}
