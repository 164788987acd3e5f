package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
)

// releases are the two ways to give a lock back; every guarantee of a
// release holds for both.
var releases = []struct {
	name string
	call func(l *lock.Lock, ctx context.Context) error
}{
	{"Release", (*lock.Lock).Release},
	{"ReleaseLua", (*lock.Lock).ReleaseLua},
}

func TestRelease_deletesTheKeyOnce(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, r := range releases {
		t.Run(r.name, func(t *testing.T) {
			l := mustAcquire(t, rdb, key, 10*time.Second)
			if err := r.call(l, ctx); err != nil {
				t.Fatalf("first release: %v", err)
			}
			if n := rdb.Exists(ctx, key).Val(); n != 0 {
				t.Error("the key is still there")
			}
			if err := r.call(l, ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("second release: got %v, want ErrNotHeld", err)
			}
		})
	}
}

// delexSpy counts the DELEX calls that reach the server.
type delexSpy struct {
	redis.UniversalClient
	delex atomic.Int64
}

func (s *delexSpy) DelExArgs(ctx context.Context, key string, a redis.DelExArgs) *redis.IntCmd {
	s.delex.Add(1)
	return s.UniversalClient.DelExArgs(ctx, key, a)
}

// Release asks the server once whether it has DELEX (Redis 8.4 and later)
// and uses it where it does, the Lua script where it does not; ReleaseLua
// never sends DELEX. Either way the key is deleted.
func TestRelease_picksDelexWhereTheServerHasIt(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	has, err := lock.SupportsDelex(ctx, rdb)
	if err != nil {
		t.Fatalf("SupportsDelex: %v", err)
	}
	t.Logf("server has DELEX: %v", has)

	spy := &delexSpy{UniversalClient: rdb}
	for i := range 2 {
		l := mustAcquire(t, spy, key, 10*time.Second)
		if err := l.Release(ctx); err != nil {
			t.Fatalf("release %d: %v", i+1, err)
		}
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Fatalf("release %d left the key", i+1)
		}
	}
	// One probe, then one DELEX per release where the server has it.
	want := int64(1)
	if has {
		want = 3
	}
	if n := spy.delex.Load(); n != want {
		t.Errorf("%d DELEX calls for two releases, want %d (DELEX on the server: %v)", n, want, has)
	}

	lua := &delexSpy{UniversalClient: rdb}
	l := mustAcquire(t, lua, key, 10*time.Second)
	if err := l.ReleaseLua(ctx); err != nil {
		t.Fatalf("ReleaseLua: %v", err)
	}
	if n := lua.delex.Load(); n != 0 {
		t.Errorf("ReleaseLua sent %d DELEX calls, want none", n)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("ReleaseLua left the key")
	}
}

func TestRelease_anotherTokenLeavesTheLock(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, r := range releases {
		t.Run(r.name, func(t *testing.T) {
			l := mustAcquire(t, rdb, key, 10*time.Second)
			// Someone else's lease now sits on the key, as after an expiry
			// and a new acquisition.
			if err := rdb.Set(ctx, key, "someone-else", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if err := r.call(l, ctx); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("got %v, want ErrNotHeld", err)
			}
			if got := holder(t, rdb, key); got != "someone-else" {
				t.Errorf("the key holds %q, want the other holder's token", got)
			}
			rdb.Del(ctx, key)
		})
	}
}

func TestRelease_redisErrorIsReturned(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	f := &faultyClient{Client: rdb}
	l := mustAcquire(t, f, key, 10*time.Second)
	injected := errors.New("test: connection reset")
	f.failWith(injected)
	if err := l.ReleaseLua(ctx); !errors.Is(err, injected) || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("ReleaseLua: got %v, want the injected error and not ErrNotHeld", err)
	}
	if err := l.Refresh(ctx); !errors.Is(err, injected) || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh: got %v, want the injected error and not ErrNotHeld", err)
	}
	if got := holder(t, rdb, key); got != lock.TokenOf(l) {
		t.Error("a failed release deleted the key")
	}
}

// ReleaseAfter sends the holder's last write and the release in one
// round trip, the write first: whoever takes the lock next reads it.
func TestReleaseAfter_writesThenReleases(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 20*time.Second)
	balance := strings.TrimSuffix(key, "lock:{wallet:1}") + "balance:{wallet:1}"
	t.Cleanup(func() { rdb.Del(context.Background(), balance) })

	t.Run("a polling lock", func(t *testing.T) {
		l := mustAcquire(t, rdb, key, 10*time.Second)
		p := rdb.Pipeline()
		set := p.Set(ctx, balance, "90", 0)
		if err := l.ReleaseAfter(ctx, p); err != nil {
			t.Fatalf("ReleaseAfter: %v", err)
		}
		if set.Err() != nil || rdb.Get(ctx, balance).Val() != "90" {
			t.Errorf("the write: %v, balance %q; want it landed", set.Err(), rdb.Get(ctx, balance).Val())
		}
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Error("the lock is still held")
		}
	})

	t.Run("a fair lock hands off after the write", func(t *testing.T) {
		f := newFair(t, rdb)
		owner := mustFairAcquire(t, f, key, 10*time.Second)
		next := acquireAsync(ctx, f, key, 10*time.Second)
		waitQueued(t, rdb, key, 1)
		p := rdb.Pipeline()
		p.Set(ctx, balance, "80", 0)
		if err := owner.ReleaseAfter(ctx, p); err != nil {
			t.Fatalf("ReleaseAfter: %v", err)
		}
		r := await(t, next, slack, "the waiter")
		if r.err != nil {
			t.Fatal(r.err)
		}
		if got := rdb.Get(ctx, balance).Val(); got != "80" {
			t.Errorf("the next holder reads %q, want the write before the release, 80", got)
		}
		r.l.Release(ctx)
	})

	t.Run("a lost lease still sends the write", func(t *testing.T) {
		l := mustAcquire(t, rdb, key, 10*time.Second)
		rdb.Del(ctx, key) // the lease is gone, as after its TTL
		p := rdb.Pipeline()
		set := p.Set(ctx, balance, "70", 0)
		if err := l.ReleaseAfter(ctx, p); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("ReleaseAfter of a lost lease: %v, want ErrNotHeld", err)
		}
		if set.Err() != nil || rdb.Get(ctx, balance).Val() != "70" {
			t.Errorf("the write: %v; want it landed, as a write before Release would", set.Err())
		}
	})

	t.Run("a nil lock sends nothing", func(t *testing.T) {
		var l *lock.Lock
		p := rdb.Pipeline()
		p.Set(ctx, balance, "60", 0)
		if err := l.ReleaseAfter(ctx, p); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("ReleaseAfter on a nil lock: %v, want ErrNotHeld", err)
		}
		if got := rdb.Get(ctx, balance).Val(); got != "70" {
			t.Errorf("balance %q after ReleaseAfter on a nil lock, want 70: the write was sent", got)
		}
	})
}
