package lock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/lock"
)

// These examples need a running Redis, so they have no Output line: go test
// compiles them but does not run them.

func ExampleAcquire() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	// Wait at most 5 s for the lock; hold it for at most 2 s.
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	l, err := lock.Acquire(actx, rdb, "app:lock:{wallet:42}", 2*time.Second)
	if err != nil {
		// A Redis error, or "gave up waiting" when actx ended.
		fmt.Println("no lock:", err)
		return
	}
	// Give it back even if ctx is cancelled meanwhile, but never wait long.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		if err := l.Release(rctx); errors.Is(err, lock.ErrNotHeld) {
			log.Println("the lease expired before the work ended: someone else may have run concurrently")
		}
	}()

	fmt.Println("holding", l.Key, "as", l.ID()) // the ID names the holder without its token
}

func ExampleLock_Watch() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	ctx := context.Background()

	const ttl = 2 * time.Second
	l, err := lock.Acquire(ctx, rdb, "app:lock:{report}", ttl)
	if err != nil {
		fmt.Println("no lock:", err)
		return
	}
	defer l.Release(ctx) // stops the watchdog, then gives the lease back

	// The work may run longer than ttl: the watchdog refreshes the lease
	// every ttl/3, and cancels work if a refresh fails.
	work, _ := l.Watch(ctx, ttl)

	select {
	case <-time.After(5 * time.Second): // the protected work
		fmt.Println("done while holding the lease")
	case <-work.Done():
		// Stop at once and write nothing: someone else may hold it now.
		fmt.Println("lease lost:", context.Cause(work))
	}
}
