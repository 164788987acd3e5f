// Package ledger is what the lab's runs add to the article's wallet (the
// root's wallet and wallet/postgres): many wallets instead of one, each by
// id under a run's key prefix, with keys that share a Redis Cluster slot
// (BalanceKey, LockKey); a block of ids each prefix owns (FirstIDFor); the
// balance each spend read, for a history (ObserveReads); a run's verdict
// wallet by wallet (Judge); and a Store of ranges of wallets (store.go).
// The spend and the check are the root's.
package ledger

import (
	"context"
	"errors"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/wallet"
)

// DefaultPrefix is where the lab's programs keep their keys and name their
// rows, under a name of each program's own (walletlock:demo:loadtest:).
// Tests use prefixes of their own.
const DefaultPrefix = "walletlock:demo:"

// ErrNoWallet is returned when a wallet's balance is not there: no key in
// Redis, no row in PostgreSQL.
var ErrNoWallet = errors.New("ledger: no balance stored")

// BalanceKey returns the Redis key that holds the balance of wallet id, for
// example "walletlock:demo:balance:{wallet:42}". The braces are a Redis
// Cluster hash tag: LockKey and the lock's fence counter share it, so a
// wallet's keys live in one slot.
func BalanceKey(prefix string, id int64) string {
	return prefix + "balance:{wallet:" + strconv.FormatInt(id, 10) + "}"
}

// LockKey returns the key of the lock that guards wallet id, for example
// "walletlock:demo:lock:{wallet:42}".
func LockKey(prefix string, id int64) string {
	return prefix + "lock:{wallet:" + strconv.FormatInt(id, 10) + "}"
}

// IDBlock is how many wallet ids a run owns (FirstIDFor): the most
// wallets a run may spend from.
const IDBlock = 1_000_000

// FirstIDFor is the first wallet id of a run on prefix: one of nine million
// blocks of IDBlock ids, from 10^12 up, chosen by a hash of the prefix.
// Two prefixes that get the same block are refused, not mixed up (the
// Store's owners).
func FirstIDFor(prefix string) int64 {
	const base, blocks = 1_000_000_000_000, 9_000_000
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return base + int64(h.Sum64()%blocks)*IDBlock
}

// MaxAmount bounds a run's -amount: with it, and at most a million
// wallets of at most math.MaxInt64/wallets each, no check line's figure
// leaves an int64 (wallet.Check counts in int64) before 9x10^12 spends.
const MaxAmount = 1_000_000

// A history (internal/history) records the balance each spend read. A
// spend reads inside itself, so a recorder hands it a context that
// carries a function to tell (ObserveReads), which every read of a
// balance through Observed or the Store calls; the last one is what the
// write was computed from.

type readsKey struct{}

// ObserveReads returns a copy of ctx whose balance reads call seen with
// the balance read.
func ObserveReads(ctx context.Context, seen func(balance int64)) context.Context {
	return context.WithValue(ctx, readsKey{}, seen)
}

// ReadSeen tells ctx's observer, if it has one, the balance just read.
func ReadSeen(ctx context.Context, balance int64) {
	if seen, ok := ctx.Value(readsKey{}).(func(int64)); ok {
		seen(balance)
	}
}

// Observed is rdb, whose GETs that answer a balance tell ctx's observer
// when it has one: hand it to wallet.Spend, and the history learns what
// the spend read.
func Observed(ctx context.Context, rdb redis.Cmdable) redis.Cmdable {
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

// Landed is how many of v's spends of unknown outcome its balance says
// landed, spends of amount each: -1 when the balance fits none (v is not
// OK).
func Landed(v wallet.Verdict, amount int64) int {
	switch {
	case !v.OK:
		return -1
	case amount == 0:
		return 0
	}
	return int((v.Expected - v.Balance) / amount)
}

// Off is how far a balance that v finds wrong is from the nearest one its
// spends allow: above the highest, below the lowest, between two steps,
// or below zero. 0 when v is OK.
func Off(v wallet.Verdict, amount int64) int64 {
	b := v.Balance
	switch {
	case v.OK:
		return 0
	case b > v.Expected:
		return subCapped(b, v.Expected)
	case b < v.Lowest:
		return subCapped(v.Lowest, b)
	case b < 0:
		return subCapped(0, b)
	case amount > 0:
		r := (v.Expected - b) % amount
		return min(r, amount-r)
	}
	return 0
}

// Judge is a run's verdict, wallet by wallet (wallet.Check): it returns
// the check line's figures summed over the wallets, OK only if every
// wallet is; how many unknown spends landed in all (-1 when a wallet is
// off); how many wallets are off, and by how much money in all. unknown
// may be nil.
func Judge(initial, amount int64, accepted, unknown, balances []int64) (v wallet.Verdict, landed, off int, money int64) {
	var sum wallet.Tally
	var total, sumBalance int64
	for i, b := range balances {
		t := wallet.Tally{Accepted: int(accepted[i])}
		if unknown != nil {
			t.Unknown = int(unknown[i])
		}
		w := wallet.Check(initial, amount, t, b)
		if w.OK {
			landed += Landed(w, amount)
		} else {
			off++
			money = addCapped(money, Off(w, amount))
		}
		total += initial // the runs keep initial*wallets in an int64
		sum.Accepted += t.Accepted
		sum.Unknown += t.Unknown
		sumBalance += b
	}
	v = wallet.Check(total, amount, sum, sumBalance)
	v.OK = off == 0 // the line sums the wallets; the verdict is theirs
	if !v.OK {
		landed = -1
	}
	return v, landed, off, money
}

// subCapped is a-b, a >= b, capped at MaxInt64 where it would overflow.
func subCapped(a, b int64) int64 {
	if d := a - b; d >= 0 {
		return d
	}
	return math.MaxInt64
}

// addCapped is a+b, b >= 0, capped at MaxInt64 where it would overflow.
func addCapped(a, b int64) int64 {
	if s := a + b; s >= a {
		return s
	}
	return math.MaxInt64
}
