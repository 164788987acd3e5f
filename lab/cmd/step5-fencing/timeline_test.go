package main

import (
	"context"
	"errors"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/testenv"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/postgres"
)

// Each order of the two holders with each kind of moves, on a real Redis
// and PostgreSQL: the program's order sets the story's, so the writes that land
// are the same on every run. The claimed moves refuse A in both orders,
// the fence checked on write only refuses A only when B wrote first, and
// nothing refuses the plain moves.
func TestHolders_everyOrderGivesTheSameWritesEveryRun(t *testing.T) {
	t.Parallel()
	rdb, pool := testenv.Redis(t), testenv.Postgres(t)
	store, err := postgres.OpenStore(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 50 * time.Millisecond
	id, key := testenv.WalletID(t), testenv.Prefix(t, rdb)+"lock"
	t.Cleanup(func() { store.Delete(context.Background(), id) })
	// The fence counter's key wraps the lock's in a hash tag, {test:…}:fence:
	// it is not under the prefix, whose own clean-up misses it.
	t.Cleanup(func() { rdb.Del(context.Background(), key, lock.FenceKey(key)) })
	plain := moves{
		acquire: func(ctx context.Context) (*lock.Lock, error) { return lock.Acquire(ctx, rdb, key, ttl) },
		read:    func(ctx context.Context, _ int64) (int64, error) { return store.Balance(ctx, id) },
		write:   func(ctx context.Context, _, bal int64) error { return store.Write(ctx, id, bal) },
	}
	fenced := func(ctx context.Context) (*lock.Lock, error) { return lock.AcquireFenced(ctx, rdb, key, ttl) }
	writeOnly := moves{acquire: fenced, read: plain.read,
		write: func(ctx context.Context, fence, bal int64) error { return store.WriteFencedOnly(ctx, id, fence, bal) }}
	claimed := moves{acquire: fenced,
		read:  func(ctx context.Context, fence int64) (int64, error) { return store.Claim(ctx, id, fence) },
		write: func(ctx context.Context, fence, bal int64) error { return store.WriteFenced(ctx, id, fence, bal) }}
	const bFirst, aBetween = false, true // A wakes after B's write, or between B's read and B's write (phase 1b)
	tests := []struct {
		name     string
		between  bool
		moves    moves
		accepted int
		balanced bool
	}{
		{"plain, B writes first: both land, a spend is lost", bFirst, plain, 2, false},
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
			s, err := holders(t.Context(), time.Millisecond, tt.between, tt.moves)
			if err != nil {
				t.Fatal(err)
			}
			if s.Accepted() != tt.accepted || s.ReadA != initial || s.ReadB != initial || !s.BAccepted {
				t.Errorf("story %+v: want %d writes accepted, B's among them, both reading %d", s, tt.accepted, initial)
			}
			if !s.AAccepted && !errors.Is(s.AErr, wallet.ErrStaleFence) {
				t.Errorf("A's write refused with %v, want a stale fence", s.AErr)
			}
			bal, err := store.Balance(t.Context(), id)
			if err != nil {
				t.Fatal(err)
			}
			if v := wallet.Check(initial, amount, s.Accepted(), bal); v.OK != tt.balanced {
				t.Errorf("%s, want OK = %v", v, tt.balanced)
			}
			for _, phase := range []string{"1", "1b", "2"} {
				if len(s.Lines(phase, ttl, amount)) < 3 {
					t.Errorf("phase %s lines %q: want one per move", phase, s.Lines(phase, ttl, amount))
				}
			}
		})
	}
}
