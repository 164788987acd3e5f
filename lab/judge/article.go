package judge

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
)

// Article is the adapter of a lock with the article's API, on go-redis:
// the root's lock/, the lab's hardened lock and a learner's own. L is the
// lease (*lock.Lock), C the client type Acquire takes (lock.Client). Set
// the functions the package has; a nil one is not claimed, and its
// properties say so.
//
//	judge.Article[*lock.Lock, lock.Client]{Name: "mine",
//		Acquire: lock.Acquire, Release: (*lock.Lock).Release}.Adapter()
//
// The client it makes sends every command once (MaxRetries -1): a command
// whose reply was lost is not sent again blind.
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
	return Adapter{Name: a.Name, New: func(addr string) (Lock, error) {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
		rdb, ok := any(c).(C)
		if !ok {
			c.Close()
			var want C
			return nil, fmt.Errorf("judge: Acquire takes a %T, which a *redis.Client is not", want)
		}
		l := articleLock[L, C]{a: &a, rdb: rdb, close: c.Close}
		if a.AcquireFenced != nil && a.Fence != nil {
			return articleFenced[L, C]{l}, nil
		}
		return l, nil
	}}
}

type articleLock[L, C any] struct {
	a     *Article[L, C]
	rdb   C
	close func() error
}

func (l articleLock[L, C]) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x, err := l.a.Acquire(ctx, l.rdb, key, ttl)
	return l.a.lease(x, err, "Acquire")
}

func (l articleLock[L, C]) Close() error { return l.close() }

// can says what the package offers, from the functions it set.
func (l articleLock[L, C]) can() []string {
	var c []string
	if l.a.Refresh != nil {
		c = append(c, "refresh")
	}
	if l.a.Watch != nil {
		c = append(c, "watch")
	}
	if l.a.AcquireFenced != nil && l.a.Fence != nil {
		c = append(c, "fence")
	}
	return c
}

type articleFenced[L, C any] struct{ articleLock[L, C] }

func (l articleFenced[L, C]) AcquireFenced(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x, err := l.a.AcquireFenced(ctx, l.rdb, key, key+":fence", ttl)
	return l.a.lease(x, err, "AcquireFenced")
}

// lease wraps what Acquire or AcquireFenced returned in the lease type
// that offers what the package has (a watchdog, a fence); a nil lease with
// no error is an error of its own, named, rather than a crash later.
func (a *Article[L, C]) lease(x L, err error, call string) (Lease, error) {
	if err != nil {
		return nil, a.wrap(err)
	}
	if v := reflect.ValueOf(&x).Elem(); !v.IsValid() || (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && v.IsNil() {
		return nil, fmt.Errorf("%s returned a nil %T and no error", call, x)
	}
	l := articleLease[L, C]{a: a, l: x}
	switch fenced := call == "AcquireFenced" && a.Fence != nil; {
	case fenced && a.Watch != nil:
		return struct {
			articleWatched[L, C]
			articleFence[L, C]
		}{articleWatched[L, C]{l}, articleFence[L, C]{l}}, nil
	case fenced:
		return struct {
			articleLease[L, C]
			articleFence[L, C]
		}{l, articleFence[L, C]{l}}, nil
	case a.Watch != nil:
		return articleWatched[L, C]{l}, nil
	}
	return l, nil
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

// articleFence holds only the fence: embedded beside a lease, its lease
// field must not bring a second Release.
type articleFence[L, C any] struct{ f articleLease[L, C] }

func (l articleFence[L, C]) Fence() int64 { return l.f.a.Fence(l.f.l) }

// wrap marks the lock's "not held" as ErrNotHeld.
func (a *Article[L, C]) wrap(err error) error {
	if err != nil && a.NotHeld != nil && errors.Is(err, a.NotHeld) {
		return fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	return err
}
