package lock_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
)

// faultyClient stands between the lock and Redis. It counts every call, and
// while fail is set it answers every call with that error instead of
// passing it on. With a nil Client it never talks to Redis at all.
type faultyClient struct {
	lock.Client
	calls atomic.Int64
	fail  atomic.Pointer[error]
}

func (f *faultyClient) failWith(err error) { f.fail.Store(&err) }

// fault counts the call and returns the injected error, if any.
func (f *faultyClient) fault() error {
	f.calls.Add(1)
	if p := f.fail.Load(); p != nil {
		return *p
	}
	return nil
}

func (f *faultyClient) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	if err := f.fault(); err != nil {
		return redis.NewBoolResult(false, err)
	}
	return f.Client.SetNX(ctx, key, value, ttl)
}

func (f *faultyClient) DelExArgs(ctx context.Context, key string, a redis.DelExArgs) *redis.IntCmd {
	if err := f.fault(); err != nil {
		return redis.NewIntResult(0, err)
	}
	return f.Client.DelExArgs(ctx, key, a)
}

func (f *faultyClient) Process(ctx context.Context, cmd redis.Cmder) error {
	if err := f.fault(); err != nil {
		cmd.SetErr(err)
		return err
	}
	return f.Client.Process(ctx, cmd)
}

func (f *faultyClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if err := f.fault(); err != nil {
		return redis.NewCmdResult(nil, err)
	}
	return f.Client.Eval(ctx, script, keys, args...)
}

func (f *faultyClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if err := f.fault(); err != nil {
		return redis.NewCmdResult(nil, err)
	}
	return f.Client.EvalSha(ctx, sha, keys, args...)
}

func (f *faultyClient) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	if err := f.fault(); err != nil {
		return redis.NewCmdResult(nil, err)
	}
	return f.Client.EvalRO(ctx, script, keys, args...)
}

func (f *faultyClient) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if err := f.fault(); err != nil {
		return redis.NewCmdResult(nil, err)
	}
	return f.Client.EvalShaRO(ctx, sha, keys, args...)
}

func (f *faultyClient) ScriptExists(ctx context.Context, hashes ...string) *redis.BoolSliceCmd {
	if err := f.fault(); err != nil {
		return redis.NewBoolSliceResult(nil, err)
	}
	return f.Client.ScriptExists(ctx, hashes...)
}

func (f *faultyClient) ScriptLoad(ctx context.Context, script string) *redis.StringCmd {
	if err := f.fault(); err != nil {
		return redis.NewStringResult("", err)
	}
	return f.Client.ScriptLoad(ctx, script)
}

// setup returns a Redis client and a lock key under a prefix of the test's
// own.
func setup(t *testing.T) (redis.UniversalClient, string) {
	t.Helper()
	rdb := testenv.Redis(t)
	return rdb, labtest.Prefix(t, rdb) + "lock:{wallet:1}"
}

// mustAcquire takes the lock or ends the test.
func mustAcquire(t *testing.T, rdb lock.Client, key string, ttl time.Duration) *lock.Lock {
	t.Helper()
	l, err := lock.Acquire(labtest.Context(t, 10*time.Second), rdb, key, ttl)
	if err != nil {
		t.Fatalf("Acquire(%s, %v): %v", key, ttl, err)
	}
	return l
}

// holder returns the token stored at key, "" when the key does not exist.
func holder(t *testing.T, rdb redis.UniversalClient, key string) string {
	t.Helper()
	v, err := rdb.Get(labtest.Context(t, 5*time.Second), key).Result()
	if errors.Is(err, redis.Nil) {
		return ""
	}
	if err != nil {
		t.Fatalf("GET %s: %v", key, err)
	}
	return v
}

func TestAcquire_exactlyOneOfManyWins(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	const n = 100
	// Nobody releases, so every other caller waits until its context ends.
	// The deadline is long enough that the winner's own SET cannot time out
	// on a loaded machine, which would leave no winner at all.
	ctx := labtest.Context(t, time.Second)

	var (
		mu      sync.Mutex
		winners []*lock.Lock
		losers  []error
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			l, err := lock.Acquire(ctx, rdb, key, 30*time.Second)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				losers = append(losers, err)
				return
			}
			winners = append(winners, l)
		})
	}
	close(start)
	wg.Wait()

	if len(winners) != 1 {
		t.Fatalf("%d of %d callers got the lock, want exactly 1", len(winners), n)
	}
	for _, err := range losers {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a loser got %v, want an error matching context.DeadlineExceeded", err)
		}
	}
	if got, want := holder(t, rdb, key), lock.TokenOf(winners[0]); got != want {
		t.Errorf("the key holds %q, want the winner's token", got)
	}
	if err := winners[0].Release(labtest.Context(t, 5*time.Second)); err != nil {
		t.Errorf("winner's Release: %v", err)
	}
}

func TestAcquire_waitsForRelease(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	first := mustAcquire(t, rdb, key, 10*time.Second)
	got := make(chan *lock.Lock, 1)
	go func() {
		l, err := lock.Acquire(labtest.Context(t, 10*time.Second), rdb, key, 10*time.Second)
		if err != nil {
			t.Errorf("second Acquire: %v", err)
		}
		got <- l
	}()
	time.Sleep(50 * time.Millisecond) // let the second caller retry a few times
	if err := first.Release(labtest.Context(t, 5*time.Second)); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second := <-got
	if second == nil {
		return
	}
	if second.Attempts < 2 {
		t.Errorf("second Acquire took %d attempts, want at least 2 (it had to wait)", second.Attempts)
	}
	if lock.TokenOf(second) == lock.TokenOf(first) {
		t.Error("two acquisitions drew the same token")
	}
	if err := second.Release(labtest.Context(t, 5*time.Second)); err != nil {
		t.Errorf("second Release: %v", err)
	}
}

func TestRelease_afterExpiryLeavesTheNewHolder(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	stale := mustAcquire(t, rdb, key, 50*time.Millisecond)
	// Acquire waits for the stale lease to expire, then takes the key.
	fresh := mustAcquire(t, rdb, key, 10*time.Second)

	if err := stale.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release of an expired lease: got %v, want ErrNotHeld", err)
	}
	if err := stale.Refresh(ctx, 50*time.Millisecond); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh of an expired lease: got %v, want ErrNotHeld", err)
	}
	if got := holder(t, rdb, key); got != lock.TokenOf(fresh) {
		t.Fatalf("after the stale holder's Release the key holds %q, want the new holder's token", got)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl < 5*time.Second {
		t.Errorf("the stale Refresh changed the new holder's TTL to %v", pttl)
	}

	if err := fresh.Release(ctx); err != nil {
		t.Fatalf("new holder's Release: %v", err)
	}
	if err := fresh.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second Release: got %v, want ErrNotHeld", err)
	}
}

func TestRefresh_afterExpiry(t *testing.T) {
	rdb, key := setup(t)
	l := mustAcquire(t, rdb, key, 20*time.Millisecond)
	ctx := labtest.Context(t, 5*time.Second)
	for holder(t, rdb, key) != "" {
		time.Sleep(10 * time.Millisecond)
	}
	if err := l.Refresh(ctx, 20*time.Millisecond); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("got %v, want ErrNotHeld", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("Refresh of an expired lease brought the key back")
	}
}

func TestRefresh_setsTheTTLItIsGiven(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 5*time.Second)
	l := mustAcquire(t, rdb, key, time.Minute)
	// Let the lease run down, as time would, then renew it.
	if err := rdb.PExpire(ctx, key, time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Refresh(ctx, time.Minute); err != nil {
		t.Fatalf("Refresh: %v", err)
	}
	if pttl := rdb.PTTL(ctx, key).Val(); pttl < 30*time.Second {
		t.Errorf("PTTL after Refresh = %v, want close to the minute it was given", pttl)
	}
	l.Release(ctx)
}

func TestRelease_nilLock(t *testing.T) {
	var l *lock.Lock
	ctx := context.Background()
	if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release: got %v, want ErrNotHeld", err)
	}
	if err := l.ReleaseLua(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("ReleaseLua: got %v, want ErrNotHeld", err)
	}
	if err := l.Refresh(ctx, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh: got %v, want ErrNotHeld", err)
	}
}

func TestAcquire_badInputNeverReachesRedis(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 5*time.Second)
	acquirers := []struct {
		name    string
		acquire func(context.Context, lock.Client, string, time.Duration) (*lock.Lock, error)
	}{
		{"Acquire", lock.Acquire},
		{"AcquireFenced", acquireFenced},
	}
	tests := []struct {
		name string
		key  string
		ttl  time.Duration
		want string // the error, which matches ErrInvalid
	}{
		{"zero TTL", key, 0, "lock: TTL must be at least 1ms, got 0s"},
		{"negative TTL", key, -time.Second, "lock: TTL must be at least 1ms, got -1s"},
		{"TTL under a millisecond", key, 500 * time.Microsecond, "lock: TTL must be at least 1ms, got 500µs"},
		{"empty key", "", time.Second, "lock: empty key"},
	}
	for _, a := range acquirers {
		for _, tt := range tests {
			t.Run(a.name+"/"+tt.name, func(t *testing.T) {
				// Every call through this client fails and is counted:
				// the input must be refused before the first one.
				spy := &faultyClient{}
				spy.failWith(errors.New("test: Redis was called"))
				l, err := a.acquire(ctx, spy, tt.key, tt.ttl)
				if !errors.Is(err, lock.ErrInvalid) || err.Error() != tt.want {
					t.Errorf("got (%v, %v), want ErrInvalid, %q", l, err, tt.want)
				}
				if badTTL := tt.ttl < time.Millisecond; errors.Is(err, lock.ErrBadTTL) != badTTL {
					t.Errorf("errors.Is(%v, ErrBadTTL) = %v, want %v: the root's lock's name for a bad TTL", err, !badTTL, badTTL)
				}
				if n := spy.calls.Load(); n != 0 {
					t.Errorf("%d calls reached Redis, want 0", n)
				}
				// The same input against the real server leaves no key.
				if _, err := a.acquire(ctx, rdb, tt.key, tt.ttl); !errors.Is(err, lock.ErrInvalid) {
					t.Errorf("against Redis: got %v, want ErrInvalid", err)
				}
				if n := rdb.Exists(ctx, key, lock.FenceKey(key)).Val(); n != 0 {
					t.Errorf("%d keys exist afterwards, want 0", n)
				}
			})
		}
	}
}

func TestAcquire_contextEndsWhileWaiting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
	}{
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"cancel", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, key := setup(t)
			held := mustAcquire(t, rdb, key, 10*time.Second)
			ctx, cancel := tt.ctx()
			defer cancel()
			l, err := lock.Acquire(ctx, rdb, key, 10*time.Second)
			if !errors.Is(err, tt.want) {
				t.Fatalf("got (%v, %v), want an error matching %v", l, err, tt.want)
			}
			if got := holder(t, rdb, key); got != lock.TokenOf(held) {
				t.Errorf("the key holds %q, want the first holder's token untouched", got)
			}
		})
	}
}

func TestAcquire_contextAlreadyCancelled(t *testing.T) {
	rdb, key := setup(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, acquire := range map[string]func(context.Context, lock.Client, string, time.Duration) (*lock.Lock, error){
		"Acquire":       lock.Acquire,
		"AcquireFenced": acquireFenced,
	} {
		l, err := acquire(ctx, rdb, key, 10*time.Second)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s: got (%v, %v), want an error matching context.Canceled", name, l, err)
		}
		if n := rdb.Exists(labtest.Context(t, 5*time.Second), key).Val(); n != 0 {
			t.Errorf("%s with a cancelled context left the lock key behind", name)
		}
	}
}

func TestAcquire_redisErrorIsNotRetried(t *testing.T) {
	rdb, key := setup(t)
	injected := errors.New("test: connection reset")
	acquirers := map[string]func(context.Context, lock.Client, string, time.Duration) (*lock.Lock, error){
		"Acquire":       lock.Acquire,
		"AcquireFenced": acquireFenced,
	}
	for name, acquire := range acquirers {
		t.Run(name, func(t *testing.T) {
			f := &faultyClient{Client: rdb}
			f.failWith(injected)
			// A long deadline: if Acquire retried the error, the test would
			// see many calls (and wait up to a minute).
			l, err := acquire(labtest.Context(t, 10*time.Second), f, key, time.Second)
			if !errors.Is(err, injected) {
				t.Fatalf("got (%v, %v), want the injected error", l, err)
			}
			// One attempt, and one token-checked delete of whatever that
			// attempt may have left; no retry.
			if n := f.calls.Load(); n != 2 {
				t.Errorf("%d calls to Redis, want 2: the attempt and its clean-up, no retry", n)
			}
		})
	}
}

// lostReply runs SET NX in Redis, then reports an error as if the reply had
// been lost on the way back: the lease exists, and the caller cannot know.
type lostReply struct{ lock.Client }

func (l lostReply) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	l.Client.SetNX(ctx, key, value, ttl)
	return redis.NewBoolResult(false, errors.New("test: i/o timeout"))
}

func TestAcquire_lostReplyLeavesNoLease(t *testing.T) {
	rdb, key := setup(t)
	_, err := lock.Acquire(labtest.Context(t, 10*time.Second), lostReply{rdb}, key, time.Minute)
	if err == nil {
		t.Fatal("Acquire succeeded through a lost reply")
	}
	if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
		t.Error("the lease whose reply was lost is still in Redis; it would block everyone for a minute")
	}
}

func TestAcquire_unreachableRedis(t *testing.T) {
	t.Parallel()
	// Nothing listens on port 1: the dial fails at once, and Acquire must
	// say so instead of retrying until its context ends.
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rdb.Close() })
	ctx := labtest.Context(t, time.Minute)
	_, err := lock.Acquire(ctx, rdb, "test:unreachable:lock", time.Second)
	if err == nil {
		t.Fatal("Acquire against a closed port succeeded")
	}
	if ctx.Err() != nil {
		t.Fatalf("Acquire waited for its context to end: %v", err)
	}
}

func TestScripts_surviveScriptFlush(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	// SCRIPT FLUSH empties the server's script cache, as a restart or a
	// failover does. It is server-wide, but harmless to everyone else for
	// the very reason under test: go-redis falls back from EVALSHA to EVAL.
	flush := func() {
		t.Helper()
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
	}

	l := mustAcquire(t, rdb, key, 10*time.Second)
	flush()
	if err := l.Refresh(ctx, 10*time.Second); err != nil {
		t.Errorf("Refresh after SCRIPT FLUSH: %v", err)
	}
	flush()
	if err := l.ReleaseLua(ctx); err != nil {
		t.Errorf("Release after SCRIPT FLUSH: %v", err)
	}
	flush()
	f, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), 10*time.Second)
	if err != nil {
		t.Fatalf("AcquireFenced after SCRIPT FLUSH: %v", err)
	}
	if f.Fence != 1 {
		t.Errorf("fence = %d, want 1", f.Fence)
	}
	flush()
	if err := f.Release(ctx); err != nil {
		t.Errorf("Release of a fenced lock after SCRIPT FLUSH: %v", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the lock key is still there")
	}
}

func TestLock_printingShowsTheKeyNotTheToken(t *testing.T) {
	rdb, key := setup(t)
	l := mustAcquire(t, rdb, key, 10*time.Second)
	defer l.Release(labtest.Context(t, 5*time.Second))
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		s := fmt.Sprintf(verb, l)
		if !strings.Contains(s, key) || strings.Contains(s, lock.TokenOf(l)) {
			t.Errorf("Sprintf(%q) = %q, want the key %q and not the token", verb, s, key)
		}
	}
}

// The work's context has often ended by the time the lease goes back
// (Ctrl-C, a deadline that ran out mid-spend). Release must still delete
// the key, or the lease would block everyone for the rest of its TTL.
func TestRelease_afterTheContextEnded(t *testing.T) {
	rdb, key := setup(t)
	for _, r := range releases {
		t.Run(r.name, func(t *testing.T) {
			l := mustAcquire(t, rdb, key, time.Minute)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if err := r.call(l, ctx); err != nil {
				t.Fatalf("%s(cancelled ctx) = %v, want nil", r.name, err)
			}
			if n := rdb.Exists(context.Background(), key).Val(); n != 0 {
				t.Error("the key is still there after a release with a cancelled context")
			}
		})
	}
}

func TestCheckTTL(t *testing.T) {
	tests := []struct {
		ttl time.Duration
		ok  bool
	}{
		{-time.Millisecond, false},
		{0, false},
		{time.Millisecond - 1, false},
		{time.Millisecond, true},
		{2 * time.Second, true},
	}
	for _, tt := range tests {
		err := lock.CheckTTL(tt.ttl)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, lock.ErrInvalid)) {
			t.Errorf("CheckTTL(%v) = %v, want ok=%v", tt.ttl, err, tt.ok)
		}
	}
}

func TestLock_IDNamesTheHolderWithoutItsToken(t *testing.T) {
	rdb := testenv.Redis(t)
	key := labtest.Prefix(t, rdb) + "lock:{id}"
	ctx := t.Context()
	first, err := lock.Acquire(ctx, rdb, key, time.Second)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	second, err := lock.Acquire(ctx, rdb, key, time.Second)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	defer second.Release(ctx)
	sum := sha1.Sum([]byte(lock.TokenOf(first)))
	if got, want := first.ID(), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("ID = %q, want the hex SHA-1 of the token %q", got, want)
	}
	if first.ID() == second.ID() {
		t.Error("two acquisitions have the same ID")
	}
	if strings.Contains(first.ID(), lock.TokenOf(first)) {
		t.Error("the ID contains the token")
	}
	var none *lock.Lock
	if none.ID() != "" || (&lock.Lock{}).ID() != "" {
		t.Error("a nil or zero Lock has an ID")
	}
}

// resentSet runs SET NX twice, as go-redis does when the reply to the
// first was lost and MaxRetries allows a resend, and answers what the
// second found.
type resentSet struct{ lock.Client }

func (r resentSet) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	r.Client.SetNX(ctx, key, value, ttl)
	return r.Client.SetNX(ctx, key, value, ttl)
}

func TestTryAcquire(t *testing.T) {
	tests := []struct {
		name   string
		client func(lock.Client) lock.Client
	}{
		{"a free lock", func(c lock.Client) lock.Client { return c }},
		{"a lost reply whose SET landed", func(c lock.Client) lock.Client { return lostReply{c} }},
		{"a SET resent after its reply was lost", func(c lock.Client) lock.Client { return resentSet{c} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, key := setup(t)
			ctx := labtest.Context(t, 10*time.Second)
			l, err := lock.TryAcquire(ctx, tt.client(rdb), key, time.Minute)
			if err != nil {
				t.Fatalf("TryAcquire = %v, want the lock", err)
			}
			if got := holder(t, rdb, key); got == "" {
				t.Fatal("TryAcquire returned a lock that Redis does not hold")
			}
			if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
				t.Errorf("PTTL = %v, want at most a minute", ttl)
			}
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
}

func TestTryAcquire_heldIsTakenAtOnce(t *testing.T) {
	rdb, key := setup(t)
	first := mustAcquire(t, rdb, key, time.Minute)
	defer first.Release(context.Background())
	ctx := labtest.Context(t, 10*time.Second)
	f := &faultyClient{Client: rdb}
	l, err := lock.TryAcquire(ctx, f, key, time.Minute)
	if !errors.Is(err, lock.ErrTaken) {
		t.Fatalf("TryAcquire on a held lock = (%v, %v), want ErrTaken", l, err)
	}
	if !strings.Contains(err.Error(), key) {
		t.Errorf("error %q does not name the key", err)
	}
	// SET NX, the check of the key's type, the check that it is not ours;
	// no waiting and no second attempt.
	if n := f.calls.Load(); n > 3 {
		t.Errorf("%d calls to Redis, want at most 3", n)
	}
	if err := first.Refresh(ctx, time.Minute); err != nil {
		t.Errorf("the first holder lost its lock: %v", err)
	}
}

func TestTryAcquire_wrongTypeAndBadInput(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	rdb.HSet(ctx, key, "f", "v")
	defer rdb.Del(context.Background(), key)
	if _, err := lock.TryAcquire(ctx, rdb, key, time.Minute); !errors.Is(err, lock.ErrWrongType) {
		t.Errorf("TryAcquire on a hash = %v, want ErrWrongType", err)
	}
	if _, err := lock.TryAcquire(ctx, rdb, key, 0); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("TryAcquire with a zero TTL = %v, want ErrInvalid", err)
	}
}

func TestDeleteIf_deletesOnlyOnAMatch(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	rdb.Set(ctx, key, "theirs", time.Minute)
	defer rdb.Del(context.Background(), key)
	if deleted, err := lock.DeleteIf(ctx, rdb, key, "ours"); err != nil || deleted {
		t.Fatalf("DeleteIf of another value = (%v, %v), want (false, nil)", deleted, err)
	}
	if got := holder(t, rdb, key); got != "theirs" {
		t.Fatalf("the key holds %q, want it untouched", got)
	}
	if deleted, err := lock.DeleteIf(ctx, rdb, key, "theirs"); err != nil || !deleted {
		t.Fatalf("DeleteIf of its value = (%v, %v), want (true, nil)", deleted, err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the key is still there")
	}
	if _, err := lock.DeleteIf(ctx, nil, key, "x"); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("DeleteIf with a nil client = %v, want ErrInvalid", err)
	}
}

// acquireFenced is lock.AcquireFenced with the counter FenceKey gives key:
// Acquire's signature, for the tests that hold both to one rule.
func acquireFenced(ctx context.Context, rdb lock.Client, key string, ttl time.Duration) (*lock.Lock, error) {
	return lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), ttl)
}
