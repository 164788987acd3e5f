// Step 5: fencing tokens, checked by PostgreSQL; the wallet is now a row.
// A takes the lease and reads, then pauses past its TTL; B takes the lease
// and reads; A wakes and writes what it read, long stale; then B writes.
// No lease can stop A's write: the database has to refuse it. Phases 1 and
// 1b end BROKEN, 2 and 3 OK, on every run:
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

var (
	ttl               = flag.Duration("ttl", 200*time.Millisecond, "how long a lease lives; A pauses longer")
	s                 *step.Run
	store             *postgres.Store
	id                int64
	lockKey, fenceKey string
)

func main() {
	s = step.Begin("step5-fencing") // -prefix, -json, Ctrl-C, the run's own keys and rows
	ctx := s.Ctx
	store = get(postgres.Open(ctx, get(postgres.Connect(ctx)), s.Owner))
	s.AtEnd(store.Clear)
	id, lockKey, fenceKey = s.ID(42), s.Key("lock:{wallet:42}"), s.Key("fence:{wallet:42}")

	v, err := holders(ctx, "1") // plain SQL: the fence goes unused
	s.Check("1", "BROKEN", v, err)
	v, err = holders(ctx, "1b") // the fence checked at the write only
	s.Check("1b", "BROKEN", v, err)
	v, err = holders(ctx, "2") // the read claims the row with its fence
	s.Check("2", "OK", v, err)
	v, err = versioned(ctx) // no lease at all
	s.Check("3", "OK", v, err)
	s.End()
}

// holders is phases 1, 1b and 2, in the order it happens.
func holders(ctx context.Context, phase string) (wallet.Verdict, error) {
	s.Must(store.Reset(ctx, id, 100))
	a := get(lock.AcquireFenced(ctx, s.Redis, lockKey, fenceKey, *ttl)) // A takes the lease
	readA := read(ctx, phase, a)                                        // and reads; it pauses.
	b := get(lock.AcquireFenced(ctx, s.Redis, lockKey, fenceKey, *ttl)) // B takes it, once A's expires,
	readB := read(ctx, phase, b)                                        // and reads what A read.
	var t wallet.Tally
	t.Accepted += write(ctx, phase, a, readA-10) // A wakes and writes, long stale;
	t.Accepted += write(ctx, phase, b, readB-10) // then B writes.
	a.Release(ctx)                               // not held: it expired while A paused
	b.Release(ctx)
	balance, err := store.Balance(ctx, id)
	return wallet.Check(100, 10, t, balance), err
}

// read is a holder's read: in phase 2 it claims the row with its fence.
func read(ctx context.Context, phase string, l *lock.Lock) int64 {
	if phase == "2" {
		return get(store.Claim(ctx, id, l.Fence)) // SET fence = mine WHERE fence < mine RETURNING balance
	}
	return get(store.Balance(ctx, id))
}

// write is a holder's write: 1 when it landed, 0 when PostgreSQL refused it.
func write(ctx context.Context, phase string, l *lock.Lock, balance int64) int {
	var err error
	switch phase {
	case "1":
		err = store.Write(ctx, id, balance)
	case "1b":
		err = store.WriteFencedOnly(ctx, id, l.Fence, balance) // WHERE fence < mine, and raises it
	default:
		err = store.WriteFenced(ctx, id, l.Fence, balance) // WHERE fence = mine
	}
	if errors.Is(err, postgres.ErrStale) {
		return 0
	}
	s.Must(err)
	return 1
}

// versioned is phase 3, with no Redis at all: 50 requests each read the
// balance and its version, and write only while the version is unchanged.
func versioned(ctx context.Context) (wallet.Verdict, error) {
	s.Must(store.Reset(ctx, id, 100))
	t := wallet.Hammer(50, func() (bool, error) { return store.SpendVersioned(ctx, id, 10, 2*time.Millisecond) })
	balance, err := store.Balance(ctx, id)
	return wallet.Check(100, 10, t, balance), err
}

// get is v, unless err ends the run (Redis or PostgreSQL failed it).
func get[T any](v T, err error) T { s.Must(err); return v }
