package lock_test

import (
	"testing"
	"time"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
)

// A program that asks HasDelex gets the answer Release then uses: the
// server is asked once for the client, by whichever comes first, and
// Release sends DELEX exactly when HasDelex said yes.
func TestHasDelex_isTheAnswerReleaseUses(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	spy := &delexSpy{UniversalClient: rdb}
	has, err := lock.HasDelex(ctx, spy)
	if err != nil {
		t.Fatalf("HasDelex: %v", err)
	}
	if again, err := lock.HasDelex(ctx, spy); err != nil || again != has {
		t.Fatalf("HasDelex asked again = %v, %v; want %v", again, err, has)
	}
	if n := spy.delex.Load(); n != 1 {
		t.Fatalf("%d probes for two questions on one client, want 1", n)
	}
	l := mustAcquire(t, spy, key, 10*time.Second)
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	want := int64(1) // the probe, and nothing more without DELEX
	if has {
		want = 2 // and the release's own DELEX
	}
	if n := spy.delex.Load(); n != want {
		t.Errorf("%d DELEX commands after HasDelex = %v and one Release, want %d", n, has, want)
	}
}
