package lock

import (
	"time"

	"example.com/walletlock/lab/lock/internal/core"
)

// What package lock/fair borrows from here (see lock/internal/core for
// why it is lent, not exported): it hands out Locks that its own hand-off
// script releases, refuses bad input as Acquire does, and reports a
// broken fence counter as AcquireFenced does.
func init() {
	core.Lend.NewLock = func(rdb any, key, token string, ttl time.Duration, attempts int, fence int64, h core.Handoff) any {
		l := newLock(rdb.(Client), key, token, ttl, attempts)
		l.Fence, l.hold.handoff = fence, h
		return l
	}
	core.Lend.Check = func(rdb any, key string, ttl time.Duration) (time.Duration, error) {
		if err := validate(rdb, key, ttl); err != nil {
			return 0, err
		}
		return wholeMillis(ttl), nil
	}
	core.Lend.FenceRefusal = fenceRefusal
}
