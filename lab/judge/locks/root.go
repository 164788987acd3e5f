// Package locks holds the judge's adapters of the locks it knows: the
// root's lock (the article's), the lab's hardened and fair locks,
// bsm/redislock, redsync on go-redis and on redigo, rueidislock, and
// redis-py's Lock (a holder in Python). Each is a few lines that turn the
// lock's API into the judge's.
package locks

import (
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lock"
)

// Root is the root's lock, the article's: lock.go (step 2), watch.go
// (step 3), fence.go (step 5).
var Root = judge.Article[*lock.Lock, lock.Client]{
	Name:          "root",
	Acquire:       lock.Acquire,
	Release:       (*lock.Lock).Release,
	Refresh:       (*lock.Lock).Refresh,
	Watch:         (*lock.Lock).Watch,
	AcquireFenced: lock.AcquireFenced,
	Fence:         func(l *lock.Lock) int64 { return l.Fence },
	NotHeld:       lock.ErrNotHeld,
}.Adapter()

// All is every lock the judge program knows, by name.
func All() []judge.Adapter {
	return []judge.Adapter{Root, Hardened, Fair, Redislock, Redsync, RedsyncRedigo, Rueidislock, RedisPy}
}
