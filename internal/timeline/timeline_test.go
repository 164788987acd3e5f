package timeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/internal/timeline"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// Each story with each kind of moves, on a real Redis and PostgreSQL: the
// order is set by channels, so the writes that land are the same on every
// run. The claimed moves refuse A in both orders, the fence checked on
// write only refuses A only when B wrote first, and nothing refuses the
// plain moves.
func TestPlay_everyStoryGivesTheSameWritesEveryRun(t *testing.T) {
	t.Parallel()
	rdb, pool := testenv.Redis(t), testenv.Postgres(t)
	store, err := wallet.OpenStore(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	const ttl, initial, amount = 50 * time.Millisecond, 100, 10
	id, key := testenv.WalletID(t), testenv.Prefix(t, rdb)+"lock"
	t.Cleanup(func() { store.Delete(context.Background(), id) })
	// The fence counter's key wraps the lock's in a hash tag, {test:…}:fence:
	// it is not under the prefix, whose own clean-up misses it.
	t.Cleanup(func() { rdb.Del(context.Background(), key, lock.FenceKey(key)) })
	plain := timeline.Moves{
		Acquire: func(ctx context.Context) (*lock.Lock, error) { return lock.Acquire(ctx, rdb, key, ttl) },
		Read:    func(ctx context.Context, _ int64) (int64, error) { return store.Balance(ctx, id) },
		Write:   func(ctx context.Context, _, bal int64) error { return store.Write(ctx, id, bal) },
	}
	fenced := func(ctx context.Context) (*lock.Lock, error) { return lock.AcquireFenced(ctx, rdb, key, ttl) }
	writeOnly := timeline.Moves{Acquire: fenced, Read: plain.Read,
		Write: func(ctx context.Context, fence, bal int64) error { return store.WriteFencedOnly(ctx, id, fence, bal) }}
	claimed := timeline.Moves{Acquire: fenced,
		Read:  func(ctx context.Context, fence int64) (int64, error) { return store.Claim(ctx, id, fence) },
		Write: func(ctx context.Context, fence, bal int64) error { return store.WriteFenced(ctx, id, fence, bal) }}
	// Unfenced and ClaimedOnRead wake A after B's write, FencedOnWrite
	// between B's read and B's write.
	bFirst, aBetween := timeline.ClaimedOnRead, timeline.FencedOnWrite
	tests := []struct {
		name     string
		story    timeline.Story
		moves    timeline.Moves
		accepted int
		balanced bool
	}{
		{"plain, B writes first: both land, a spend is lost", timeline.Unfenced, plain, 2, false},
		{"plain, A between B's read and write: both land, a spend is lost", aBetween, plain, 2, false},
		{"fenced on write, A between B's read and write: both land, a spend is lost", aBetween, writeOnly, 2, false},
		{"fenced on write, B writes first: A refused", bFirst, writeOnly, 1, true},
		{"claimed on read, B writes first: A refused", bFirst, claimed, 1, true},
		{"claimed on read, A between B's read and write: A refused", aBetween, claimed, 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := store.Reset(t.Context(), id, initial); err != nil {
				t.Fatal(err)
			}
			if err := rdb.Del(t.Context(), key, lock.FenceKey(key)).Err(); err != nil {
				t.Fatal(err)
			}
			f, err := timeline.Play(t.Context(), store, id, tt.story, amount, time.Millisecond, tt.moves)
			if err != nil {
				t.Fatal(err)
			}
			if f.Accepted() != tt.accepted || f.ReadA != initial || f.ReadB != initial || !f.BAccepted {
				t.Errorf("figures %+v: want %d writes accepted, B's among them, both reading %d", f, tt.accepted, initial)
			}
			if !f.AAccepted && !errors.Is(f.AErr, wallet.ErrStaleFence) {
				t.Errorf("A's write refused with %v, want a stale fence", f.AErr)
			}
			bal, err := store.Balance(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if v := wallet.Check(initial, amount, f.Accepted(), bal); v.OK != tt.balanced {
				t.Errorf("%s, want OK = %v", v, tt.balanced)
			}
			if len(f.Lines(ttl)) < 3 {
				t.Errorf("lines %q: want one per move", f.Lines(ttl))
			}
		})
	}
}
