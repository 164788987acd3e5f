// Step 5: fencing tokens, checked by PostgreSQL; the wallet is now a row.
// A takes the lease and reads, then pauses past its TTL; B takes the lease
// and reads; A wakes and writes what it read, long stale; then B writes.
// No lease stops A's write: the database must refuse it. Phases 1 and 1b
// end BROKEN, 2 and 3 OK, on every run:
//
//	go run ./cmd/step5-fencing
package main

import (
	"context"
	"errors"
	"flag"
	"time"

	"example.com/walletlock/internal/step"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

var ttl = flag.Duration("ttl", 200*time.Millisecond, "how long a lease lives; A pauses longer")

func main() {
	s := step.Begin("step5-fencing") // -prefix, -json, Ctrl-C, the run's own keys and rows
	pool, err := postgres.Connect(s.Ctx)
	s.Must(err)
	store, err := postgres.Open(s.Ctx, pool, s.Owner)
	s.Must(err)
	s.AtEnd(store.Clear)

	plain := func(ctx context.Context, id, _, balance int64) error { return store.Write(ctx, id, balance) } // the fence goes unused
	s.Check("1", "BROKEN", staleWrites(s.Ctx, s, store, plain), nil)
	s.Check("1b", "BROKEN", staleWrites(s.Ctx, s, store, store.WriteFencedOnly), nil) // the fence checked at the write only
	s.Check("2", "OK", claimedReads(s.Ctx, s, store), nil)                            // the read claims the row with its fence
	s.Check("3", "OK", versioned(s.Ctx, s, store), nil)                               // no lease at all
	s.End()
}

// staleWrites is phases 1 and 1b, in the order it happens: both holders
// read 100 before either writes, and write goes through for both.
func staleWrites(ctx context.Context, s *step.Run, store *postgres.Store, write func(ctx context.Context, id, fence, balance int64) error) wallet.Verdict {
	id, lockKey, fenceKey := s.ID(42), s.Key("lock:{wallet:42}"), s.Key("fence:{wallet:42}")
	s.Must(store.Reset(ctx, id, 100))
	a, err := lock.AcquireFenced(ctx, s.Redis, lockKey, fenceKey, *ttl) // A takes the lease
	s.Must(err)
	readA, err := store.Balance(ctx, id) // and reads; it pauses.
	s.Must(err)
	b, err := lock.AcquireFenced(ctx, s.Redis, lockKey, fenceKey, *ttl) // B takes it, once A's expires,
	s.Must(err)
	readB, err := store.Balance(ctx, id) // and reads what A read.
	s.Must(err)
	defer b.Release(ctx)                                     // only B has a lease to give back: A's expired while it paused
	accepted := landed(s, write(ctx, id, a.Fence, readA-10)) // A wakes and writes, long stale;
	accepted += landed(s, write(ctx, id, b.Fence, readB-10)) // then B writes.
	balance, err := store.Balance(ctx, id)
	s.Must(err)
	return wallet.Check(100, 10, wallet.Tally{Accepted: accepted}, balance)
}

// claimedReads is phase 2: a read claims the row with the reader's fence,
// and a write lands only while the row still carries that fence.
func claimedReads(ctx context.Context, s *step.Run, store *postgres.Store) wallet.Verdict {
	id, lockKey, fenceKey := s.ID(42), s.Key("lock:{wallet:42}"), s.Key("fence:{wallet:42}")
	s.Must(store.Reset(ctx, id, 100))
	a, err := lock.AcquireFenced(ctx, s.Redis, lockKey, fenceKey, *ttl) // A takes the lease
	s.Must(err)
	readA, err := store.Claim(ctx, id, a.Fence) // and claims the row as it reads; it pauses.
	s.Must(err)
	b, err := lock.AcquireFenced(ctx, s.Redis, lockKey, fenceKey, *ttl) // B takes it, once A's expires,
	s.Must(err)
	readB, err := store.Claim(ctx, id, b.Fence) // and claims the row from A as it reads.
	s.Must(err)
	defer b.Release(ctx)                                                 // only B has a lease to give back: A's expired while it paused
	accepted := landed(s, store.WriteFenced(ctx, id, a.Fence, readA-10)) // A wakes and writes: refused, the row is B's;
	accepted += landed(s, store.WriteFenced(ctx, id, b.Fence, readB-10)) // B's write lands.
	balance, err := store.Balance(ctx, id)
	s.Must(err)
	return wallet.Check(100, 10, wallet.Tally{Accepted: accepted}, balance)
}

// landed is 1 for a write that landed, 0 for one PostgreSQL refused.
func landed(s *step.Run, err error) int {
	if errors.Is(err, postgres.ErrStale) {
		return 0
	}
	s.Must(err)
	return 1
}

// versioned is phase 3, with no Redis at all: 50 requests each read the
// balance and its version, and write only while the version is unchanged.
func versioned(ctx context.Context, s *step.Run, store *postgres.Store) wallet.Verdict {
	id := s.ID(42)
	s.Must(store.Reset(ctx, id, 100))
	t := wallet.Hammer(50, func() (bool, error) { return store.SpendVersioned(ctx, id, 10, 2*time.Millisecond) })
	balance, err := store.Balance(ctx, id)
	s.Must(err)
	return wallet.Check(100, 10, t, balance)
}
