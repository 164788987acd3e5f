package judge

import (
	"context"
	"testing"
	"time"

	hlock "example.com/walletlock/lab/lock"
)

// A lock whose Acquire starts its own watchdog (rueidislock's lease is
// renewed for as long as it is held) sends renewals while the judge waits
// for its lease to lapse: the holder must stand still at the wire, as a
// paused process does, for the late release to be judged at all.
func TestReleaseOwn_aLeaseThatRenewsItself(t *testing.T) {
	a := Article[*hlock.Lock, hlock.Client]{Name: "renewing",
		Acquire: func(ctx context.Context, rdb hlock.Client, key string, ttl time.Duration) (*hlock.Lock, error) {
			l, err := hlock.Acquire(ctx, rdb, key, ttl)
			if err == nil {
				l.Watch(context.Background()) // until Release, which stops it
			}
			return l, err
		},
		Release: (*hlock.Lock).Release, NotHeld: hlock.ErrNotHeld}.Adapter()
	if v := judgeOne(t, a, "release-own"); v.Outcome != pass {
		t.Errorf("%s: %s; want a pass", v.Outcome, v.Why)
	}
}
