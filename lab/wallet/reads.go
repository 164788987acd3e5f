package wallet

import (
	"context"

	"github.com/redis/go-redis/v9"
)

// A history (internal/history) records the balance each spend read. The
// spends here read inside themselves, so a recorder hands its spend a
// context that carries a function to tell: ObserveReads. Every read of a
// balance a spend makes with that context (Spend's GET, through observed;
// Balance; the Store's Balance, Claim and spends) calls it; a spend that
// reads again after a conflict calls it again, and the last read is the
// one its write was computed from.

type readsKey struct{}

// ObserveReads returns a copy of ctx whose balance reads call seen with
// the balance read.
func ObserveReads(ctx context.Context, seen func(balance int64)) context.Context {
	return context.WithValue(ctx, readsKey{}, seen)
}

// observed is rdb, whose GETs that answer a balance tell ctx's observer
// when it has one.
func observed(ctx context.Context, rdb redis.Cmdable) redis.Cmdable {
	if seen, ok := ctx.Value(readsKey{}).(func(int64)); ok {
		return readsSeen{rdb, seen}
	}
	return rdb
}

type readsSeen struct {
	redis.Cmdable
	seen func(int64)
}

func (r readsSeen) Get(ctx context.Context, key string) *redis.StringCmd {
	cmd := r.Cmdable.Get(ctx, key)
	if n, err := cmd.Int64(); err == nil {
		r.seen(n)
	}
	return cmd
}

// ReadSeen tells ctx's observer, if it has one, the balance just read.
func ReadSeen(ctx context.Context, balance int64) {
	if seen, ok := ctx.Value(readsKey{}).(func(int64)); ok {
		seen(balance)
	}
}
