package judge

import (
	"context"
	"strings"
	"testing"
	"time"

	hlock "example.com/walletlock/lab/lock"
)

// A lock that keeps its lease under a name of its own (rueidislock's
// rueidislock:0:<name>) is judged on the key it keeps: the hash goes
// there, and the hardened lock, prefixed, still refuses it at once.
func TestWrongType_theKeyTheLockKeeps(t *testing.T) {
	a := Article[*hlock.Lock, hlock.Client]{Name: "prefixed",
		Acquire: func(ctx context.Context, rdb hlock.Client, key string, ttl time.Duration) (*hlock.Lock, error) {
			return hlock.Acquire(ctx, rdb, "p:"+key, ttl)
		},
		Release: (*hlock.Lock).Release, NotHeld: hlock.ErrNotHeld}.Adapter()
	v := judgeOne(t, a, "wrong-type")
	if v.Outcome != pass || !strings.Contains(v.Why, "p:judge:wrong-type:") {
		t.Errorf("%s: %s; want a pass, the lock refusing p:judge:wrong-type:…", v.Outcome, v.Why)
	}
}
