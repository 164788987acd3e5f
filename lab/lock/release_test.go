package lock_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
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
	ctx := labtest.Context(t, 10*time.Second)
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
	ctx := labtest.Context(t, 10*time.Second)
	has, err := lock.HasDelex(ctx, rdb)
	if err != nil {
		t.Fatalf("HasDelex: %v", err)
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
	ctx := labtest.Context(t, 10*time.Second)
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
	ctx := labtest.Context(t, 10*time.Second)
	f := &faultyClient{Client: rdb}
	l := mustAcquire(t, f, key, 10*time.Second)
	injected := errors.New("test: connection reset")
	f.failWith(injected)
	if err := l.ReleaseLua(ctx); !errors.Is(err, injected) || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("ReleaseLua: got %v, want the injected error and not ErrNotHeld", err)
	}
	if err := l.Refresh(ctx, 10*time.Second); !errors.Is(err, injected) || errors.Is(err, lock.ErrNotHeld) {
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
	ctx := labtest.Context(t, 20*time.Second)
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

// losingClient passes every command on to Redis, and makes the replies of
// the first lose commands sent with go-redis's NoRetry flag (the release)
// lost, as a connection that breaks while the reply is on its way does.
// With run false the lost command never reaches Redis, as when the
// connection broke before it was sent.
type losingClient struct {
	lock.Client
	lose atomic.Int64
	run  bool
}

func (c *losingClient) Process(ctx context.Context, cmd redis.Cmder) error {
	if !cmd.NoRetry() || c.lose.Add(-1) < 0 {
		return c.Client.Process(ctx, cmd)
	}
	if c.run {
		c.Client.Process(ctx, cmd)
	}
	cmd.SetErr(io.ErrUnexpectedEOF)
	return io.ErrUnexpectedEOF
}

// losingPipe loses every reply of a pipeline, which ran when run is set
// and never reached Redis otherwise.
type losingPipe struct {
	redis.Pipeliner
	run bool
}

func (p losingPipe) Exec(ctx context.Context) ([]redis.Cmder, error) {
	var cmds []redis.Cmder
	if p.run {
		cmds, _ = p.Pipeliner.Exec(ctx)
	} else {
		cmds = p.Pipeliner.Cmds()
		p.Pipeliner.Discard()
	}
	for _, cmd := range cmds {
		cmd.SetErr(io.ErrUnexpectedEOF)
	}
	return cmds, io.ErrUnexpectedEOF
}

// A release whose reply is lost is sent once more, and what the two say
// together is what Release returns: nil when the second deleted the key
// (the first never ran), ErrUnknown when it found the key gone (the first
// may have deleted it) or got no reply either, never ErrNotHeld.
func TestRelease_lostReplyIsUnknownNeverNotHeld(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	cases := []struct {
		name string
		lose int64 // replies lost, the first's and maybe the second's
		run  bool  // whether the lost ones ran in Redis
		want error // nil, or ErrUnknown
	}{
		{"the release ran, its reply was lost", 1, true, lock.ErrUnknown},
		{"the release never reached Redis", 1, false, nil},
		{"the release ran, both replies were lost", 2, true, lock.ErrUnknown},
		{"neither reached Redis", 2, false, lock.ErrUnknown},
	}
	for _, r := range []string{"Release", "ReleaseLua", "ReleaseAfter"} {
		for _, c := range cases {
			t.Run(r+"/"+c.name, func(t *testing.T) {
				f := &losingClient{Client: rdb, run: c.run}
				l := mustAcquire(t, f, key, 10*time.Second)
				t.Cleanup(func() { rdb.Del(context.Background(), key) })
				var err error
				switch r {
				case "Release":
					f.lose.Store(c.lose)
					err = l.Release(ctx)
				case "ReleaseLua":
					f.lose.Store(c.lose)
					err = l.ReleaseLua(ctx)
				case "ReleaseAfter":
					f.lose.Store(c.lose - 1) // the pipeline loses the first
					err = l.ReleaseAfter(ctx, losingPipe{rdb.Pipeline(), c.run})
				}
				switch {
				case errors.Is(err, lock.ErrNotHeld):
					t.Fatalf("got %v: it matches ErrNotHeld", err)
				case c.want == nil && err != nil:
					t.Fatalf("got %v, want nil", err)
				case c.want != nil && !errors.Is(err, c.want):
					t.Fatalf("got %v, want ErrUnknown", err)
				}
				if c.run || c.want == nil {
					if n := rdb.Exists(ctx, key).Val(); n != 0 {
						t.Error("the key is still there")
					}
				}
			})
		}
	}
}

// Refresh may be sent twice (refresh.lua is idempotent for its token); a
// reply that never came is ErrUnknown, not ErrNotHeld.
func TestRefresh_lostReplyIsUnknown(t *testing.T) {
	rdb, key := setup(t)
	f := &faultyClient{Client: rdb}
	l := mustAcquire(t, f, key, 10*time.Second)
	t.Cleanup(func() { l.Release(context.Background()) })
	f.failWith(io.ErrUnexpectedEOF)
	err := l.Refresh(labtest.Context(t, 10*time.Second), 10*time.Second)
	if !errors.Is(err, lock.ErrUnknown) || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh with its reply lost: %v, want ErrUnknown", err)
	}
	f.fail.Store(nil)
}

// With the client's connections killed every 20 ms from another client,
// while goroutines take turns on one lock with a long TTL, no release of a
// lock that was held answers ErrNotHeld (go-redis would resend a release
// whose reply was lost, and the resent one would find the key gone);
// the count is right and no two holders overlap. A release that cannot
// tell is ErrUnknown, counted apart.
func TestRelease_connectionsKilledEvery20msNeverNotHeld(t *testing.T) {
	t.Parallel()
	srv := labtest.StartRedis(t) // it kills every connection: not the shared server
	// MaxRetries 1, as services.RedisOptions sets: go-redis resends a
	// command whose reply was lost, unless it carries NoRetry.
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: 1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	killer := srv.Client(t)
	var errs atomic.Int64
	rdb.AddHook(errorCounter{&errs})

	const workers, rounds, ttl = 10, 100, 2 * time.Second
	ctx := labtest.Context(t, 3*time.Minute)
	key := "lock:{wallet:1}"
	var counter, inside, overlaps, notHeld, unknown, other, acquireErrs atomic.Int64
	stop := labtest.Disrupt(20*time.Millisecond, func() {
		killer.ClientKillByFilter(context.Background(), "TYPE", "normal", "SKIPME", "yes")
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := 0; i < rounds && ctx.Err() == nil; {
				l, err := lock.Acquire(ctx, rdb, key, ttl)
				if err != nil {
					acquireErrs.Add(1) // a lost SET NX reply: try again
					continue
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				counter.Store(counter.Load() + 1) // lost updates if two hold it
				inside.Add(-1)
				var rerr error
				switch (w + i) % 3 {
				case 0:
					rerr = l.Release(ctx)
				case 1:
					rerr = l.ReleaseLua(ctx)
				default:
					rerr = l.ReleaseAfter(ctx, rdb.Pipeline())
				}
				switch {
				case rerr == nil:
				case errors.Is(rerr, lock.ErrNotHeld):
					notHeld.Add(1)
					t.Errorf("release %d of worker %d: %v", i, w, rerr)
				case errors.Is(rerr, lock.ErrUnknown):
					unknown.Add(1)
				default:
					other.Add(1)
					t.Logf("release %d of worker %d: %v", i, w, rerr)
				}
				i++
			}
		})
	}
	wg.Wait()
	kills := stop()
	t.Logf("%d kills, %d failed commands; releases: %d not held, %d unknown, %d other errors; %d acquire errors",
		kills, errs.Load(), notHeld.Load(), unknown.Load(), other.Load(), acquireErrs.Load())
	if err := ctx.Err(); err != nil {
		t.Fatalf("the rounds did not end in time: %v", err)
	}
	if n := counter.Load(); n != workers*rounds {
		t.Errorf("counter = %d, want %d", n, workers*rounds)
	}
	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d overlaps, want 0", n)
	}
	if n := notHeld.Load(); n != 0 {
		t.Errorf("%d releases of a held lock answered ErrNotHeld, want 0", n)
	}
}

// errorCounter is a go-redis hook that counts the commands that failed.
type errorCounter struct{ n *atomic.Int64 }

func (errorCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h errorCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if err != nil {
			h.n.Add(1)
		}
		return err
	}
}

func (h errorCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if err != nil {
			h.n.Add(1)
		}
		return err
	}
}
