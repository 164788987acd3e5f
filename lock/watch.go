package lock

import (
	"context"
	_ "embed"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Refresh sets the lock's TTL to ttl again, only while the key holds our
// token (refresh.lua): a lease that expired, or passed to someone else, is
// neither extended nor created again, and Refresh returns ErrNotHeld. As
// with Release, a lost reply is an error that is not ErrNotHeld.
func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error {
	if ttl < time.Millisecond {
		return ErrBadTTL
	}
	n, err := refreshScript.Run(ctx, l.rdb, []string{l.Key}, l.Token, ttl.Milliseconds()).Int()
	if err != nil {
		return fmt.Errorf("lock: refresh %s: %w", l.Key, err)
	}
	if n == 0 {
		return ErrNotHeld
	}
	return nil
}

// Watch is a watchdog: it refreshes the lock every ttl/3 while the work
// runs, and cancels the context it returns as soon as a refresh fails, or
// does not answer within ttl/3, with the reason as the context's cause.
// Losing the lease stops the work; it is never only logged. Do the work
// with the returned context, and call stop when the work is done. A ttl
// under 1 ms cancels it at once, with ErrBadTTL, and starts no watchdog.
func (l *Lock) Watch(parent context.Context, ttl time.Duration) (work context.Context, stop context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	stop = func() { cancel(context.Canceled) }
	if ttl < time.Millisecond {
		cancel(ErrBadTTL)
		return ctx, stop
	}
	go func() {
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithTimeout(ctx, ttl/3) // a hung call must not outlast the lease
			err := l.Refresh(rctx, ttl)
			rcancel()
			if err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("lock: lease on %s lost: %w", l.Key, err))
				return
			}
		}
	}()
	return ctx, stop
}

//go:embed refresh.lua
var RefreshLua string // the lab's hardened lock sends it too

var refreshScript = redis.NewScript(RefreshLua)
