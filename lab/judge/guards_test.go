package judge

import (
	"context"
	"strings"
	"testing"
	"time"

	hlock "example.com/walletlock/lab/lock"
)

// Locks of other shapes than the article's, each judged by the test of
// the judge's fix it needed; TestMain serves them as holders too.
var otherShapes = []Adapter{
	// The hardened lock under a name of its own, as rueidislock keeps
	// rueidislock:0:<name>.
	Article[*hlock.Lock, hlock.Client]{Name: "prefixed",
		Acquire: func(ctx context.Context, rdb hlock.Client, key string, ttl time.Duration) (*hlock.Lock, error) {
			return hlock.Acquire(ctx, rdb, "p:"+key, ttl)
		},
		Release: (*hlock.Lock).Release, NotHeld: hlock.ErrNotHeld}.Adapter(),
	// The hardened lock with its watchdog started by Acquire, as
	// rueidislock's lease is renewed for as long as it is held.
	Article[*hlock.Lock, hlock.Client]{Name: "renewing",
		Acquire: func(ctx context.Context, rdb hlock.Client, key string, ttl time.Duration) (*hlock.Lock, error) {
			l, err := hlock.Acquire(ctx, rdb, key, ttl)
			if err == nil {
				l.Watch(context.Background(), ttl) // until Release, which stops it
			}
			return l, err
		},
		Release: (*hlock.Lock).Release, NotHeld: hlock.ErrNotHeld}.Adapter(),
}

// A lock that keeps its lease under a name of its own is judged on the
// key it keeps: the hash goes there, and the hardened lock, prefixed,
// still refuses it at once.
func TestWrongType_theKeyTheLockKeeps(t *testing.T) {
	rep := judged(t, t.Context(), "prefixed", "wrong-type")
	if len(rep.Verdicts) != 1 {
		t.Fatalf("%d verdicts, want wrong-type's", len(rep.Verdicts))
	}
	if v := rep.Verdicts[0]; v.Outcome != pass || !strings.Contains(v.Why, "p:judge:wrong-type:") {
		t.Errorf("%s: %s; want a pass, the lock refusing p:judge:wrong-type:…", v.Outcome, v.Why)
	}
}
