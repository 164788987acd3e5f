package lock_test

// The lock API used the wrong way: a nil client, a Lock that no Acquire
// made, a nil func, a key that holds something else, fences too large for
// a script, a TTL with a fraction of a millisecond. Each answers with an
// error at once (or, for a nil func, a panic in the caller's goroutine),
// never with a crash in a goroutine of the lock's own, a wait until ctx
// ends, or a lease shorter than asked.

import (
	"bytes"
	"context"
	"encoding"
	"encoding/gob"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
)

func TestMisuse_nilClientIsAnError(t *testing.T) {
	ctx := labtest.Context(t, 5*time.Second)
	var typedNil *redis.Client // declared, never assigned
	calls := []struct {
		name string
		call func(rdb *redis.Client, untyped bool) error
	}{
		{"Acquire", func(rdb *redis.Client, untyped bool) error {
			_, err := lock.Acquire(ctx, client(rdb, untyped), "k", time.Second)
			return err
		}},
		{"AcquireFenced", func(rdb *redis.Client, untyped bool) error {
			_, err := lock.AcquireFenced(ctx, client(rdb, untyped), "k", lock.FenceKey("k"), time.Second)
			return err
		}},
		{"RaiseFence", func(rdb *redis.Client, untyped bool) error {
			_, err := lock.RaiseFence(ctx, client(rdb, untyped), lock.FenceKey("k"), 1)
			return err
		}},
		{"HasDelex", func(rdb *redis.Client, untyped bool) error {
			_, err := lock.HasDelex(ctx, client(rdb, untyped))
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name+" with a nil interface", func(t *testing.T) {
			if err := c.call(nil, true); !errors.Is(err, lock.ErrInvalid) || err.Error() != "lock: nil client" {
				t.Errorf("got %v, want ErrInvalid, \"lock: nil client\"", err)
			}
		})
		t.Run(c.name+" with a nil *redis.Client", func(t *testing.T) {
			if err := c.call(typedNil, false); !errors.Is(err, lock.ErrInvalid) || err.Error() != "lock: nil client" {
				t.Errorf("got %v, want ErrInvalid, \"lock: nil client\"", err)
			}
		})
	}
}

// client returns rdb as a lock.Client, or a nil interface when untyped.
func client(rdb *redis.Client, untyped bool) lock.Client {
	if untyped {
		return nil
	}
	return rdb
}

func TestMisuse_aLockNoAcquireMadeIsNotHeld(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 5*time.Second)
	// A real holder, whose token a hand-made Lock copies: nothing the
	// hand-made one does may reach Redis and release it.
	held := mustAcquire(t, rdb, key, time.Minute)
	defer held.Release(ctx)

	locks := []struct {
		name string
		l    *lock.Lock
	}{
		{"nil *Lock", nil},
		{"zero Lock", &lock.Lock{}},
		{"hand-made Lock", &lock.Lock{Key: key}},
	}
	for _, tt := range locks {
		t.Run(tt.name, func(t *testing.T) {
			for _, r := range releases {
				if err := r.call(tt.l, ctx); !errors.Is(err, lock.ErrNotHeld) {
					t.Errorf("%s = %v, want ErrNotHeld", r.name, err)
				}
			}
			if err := tt.l.Refresh(ctx, time.Second); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("Refresh = %v, want ErrNotHeld", err)
			}
			work, stop := tt.l.Watch(ctx, time.Second)
			defer stop()
			if work.Err() == nil {
				t.Fatal("Watch: the work's context is not cancelled at once")
			}
			if cause := context.Cause(work); !errors.Is(cause, lock.ErrNotHeld) {
				t.Errorf("Watch: cause = %v, want ErrNotHeld", cause)
			}
		})
	}
	if got := holder(t, rdb, key); got != lock.TokenOf(held) {
		t.Errorf("the real holder's lock was touched: key holds %q", got)
	}
}

func TestMisuse_keepAliveWithANilFuncPanicsAtTheCall(t *testing.T) {
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.Contains(msg, "lock: KeepAlive") || !strings.Contains(msg, "nil refresh") {
			t.Errorf("panic %q, want one in this goroutine naming KeepAlive's nil refresh func", msg)
		}
	}()
	_, stop := lock.KeepAlive(context.Background(), time.Second, nil)
	stop()
}

func TestLock_tokenStaysOutOfEveryEncoding(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 5*time.Second)
	l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	secrets := []string{lock.TokenOf(l), fmt.Sprintf("%x", lock.TokenOf(l)), fmt.Sprint([]byte(lock.TokenOf(l)))}

	type wrapper struct{ Lock lock.Lock }
	type wrapperPtr struct{ Lock *lock.Lock }
	type hidden struct{ l lock.Lock }
	encodings := map[string]func() (string, error){
		"json of *Lock":   func() (string, error) { return str(json.Marshal(l)) },
		"json of Lock":    func() (string, error) { return str(json.Marshal(*l)) },
		"json in struct":  func() (string, error) { return str(json.Marshal(wrapper{*l})) },
		"json of []Lock":  func() (string, error) { return str(json.Marshal([]lock.Lock{*l})) },
		"xml of *Lock":    func() (string, error) { return str(xml.Marshal(l)) },
		"xml in struct":   func() (string, error) { return str(xml.Marshal(wrapperPtr{l})) },
		"text of *Lock":   func() (string, error) { return slogOf(slog.NewTextHandler, l) },
		"text of Lock":    func() (string, error) { return slogOf(slog.NewTextHandler, *l) },
		"slog json":       func() (string, error) { return slogOf(slog.NewJSONHandler, l) },
		"gob of *Lock":    func() (string, error) { return gobOf(l) },
		"gob of Lock":     func() (string, error) { return gobOf(*l) },
		"gob in struct":   func() (string, error) { return gobOf(wrapper{*l}) },
		"fmt of a struct": func() (string, error) { return fmt.Sprintf("%+v %#v", wrapper{*l}, wrapper{*l}), nil },
		"fmt of a slice":  func() (string, error) { return fmt.Sprintf("%v %+v", []lock.Lock{*l}, []*lock.Lock{l}), nil },
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3v"} {
		encodings["fmt "+verb+" of *Lock"] = func() (string, error) { return fmt.Sprintf(verb, l), nil }
		encodings["fmt "+verb+" of Lock"] = func() (string, error) { return fmt.Sprintf(verb, *l), nil }
		// fmt calls no method on an unexported field: what keeps the
		// token out here holds for a Lock anywhere.
		encodings["fmt "+verb+" of a struct that hides it"] = func() (string, error) { return fmt.Sprintf(verb, hidden{*l}), nil }
	}
	for name, encode := range encodings {
		t.Run(name, func(t *testing.T) {
			got, err := encode()
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range secrets {
				if strings.Contains(got, s) {
					t.Fatalf("the token is in %q", got)
				}
			}
		})
	}

	// What the encodings do show: the exported fields, and an address
	// where fmt meets the pointer to the token.
	want := fmt.Sprintf("{Key:%s Fence:1 Attempts:1 hold:0x", key)
	for _, v := range []any{l, *l} {
		if got := fmt.Sprintf("%+v", v); !strings.Contains(got, want) {
			t.Errorf("Sprintf(%%+v, %T) = %q, want it to hold %q", v, got, want)
		}
	}
	if _, ok := any(l).(encoding.TextMarshaler); ok {
		t.Error("*Lock is an encoding.TextMarshaler: text encoders would use it, not the fields")
	}
	js, _ := json.Marshal(l)
	if want := fmt.Sprintf(`{"Key":%q,"Fence":1,"Attempts":1}`, key); string(js) != want {
		t.Errorf("json: %s, want %s", js, want)
	}
}

func str(b []byte, err error) (string, error) { return string(b), err }

// slogOf is what a log/slog handler made by newHandler writes for v.
func slogOf[H slog.Handler](newHandler func(io.Writer, *slog.HandlerOptions) H, v any) (string, error) {
	var buf bytes.Buffer
	slog.New(newHandler(&buf, nil)).Info("held", "lock", v)
	return buf.String(), nil
}

func gobOf(v any) (string, error) {
	var buf bytes.Buffer
	err := gob.NewEncoder(&buf).Encode(v)
	return buf.String(), err
}

// otherTypes puts a value of each non-string type at key.
var otherTypes = map[string]func(ctx context.Context, rdb redis.UniversalClient, key string) error{
	"hash": func(ctx context.Context, rdb redis.UniversalClient, key string) error {
		return rdb.HSet(ctx, key, "f", "v").Err()
	},
	"list": func(ctx context.Context, rdb redis.UniversalClient, key string) error {
		return rdb.RPush(ctx, key, "v").Err()
	},
	"set": func(ctx context.Context, rdb redis.UniversalClient, key string) error {
		return rdb.SAdd(ctx, key, "v").Err()
	},
	"zset": func(ctx context.Context, rdb redis.UniversalClient, key string) error {
		return rdb.ZAdd(ctx, key, redis.Z{Score: 1, Member: "v"}).Err()
	},
}

func TestAcquire_keyOfAnotherTypeFailsAtOnce(t *testing.T) {
	acquirers := map[string]func(context.Context, lock.Client, string, time.Duration) (*lock.Lock, error){
		"Acquire":       lock.Acquire,
		"AcquireFenced": acquireFenced,
	}
	for typ, put := range otherTypes {
		for name, acquire := range acquirers {
			t.Run(name+" on a "+typ, func(t *testing.T) {
				rdb, key := setup(t)
				ctx := labtest.Context(t, 5*time.Second)
				if err := put(ctx, rdb, key); err != nil {
					t.Fatal(err)
				}
				// No deadline: before the fix this waited for ever.
				actx, cancel := context.WithCancel(ctx)
				defer cancel()
				l, err := acquire(actx, rdb, key, time.Second)
				if !errors.Is(err, lock.ErrWrongType) {
					t.Fatalf("got (%v, %v), want ErrWrongType", l, err)
				}
				if actx.Err() != nil {
					t.Fatal("it returned only when its context ended")
				}
				if want := "lock: acquire " + key + ": the key holds a " + typ + ", not a lock"; err.Error() != want {
					t.Errorf("error reads %q, want %q", err, want)
				}
				if got := rdb.Type(ctx, key).Val(); got != typ {
					t.Errorf("the key holds a %s afterwards, want the %s left alone", got, typ)
				}
				if n := rdb.Exists(ctx, lock.FenceKey(key)).Val(); n != 0 {
					t.Error("a fence was drawn")
				}
			})
		}
	}
}

func TestAcquireFenced_brokenCounterFailsAtOnce(t *testing.T) {
	tests := []struct {
		name string
		put  func(ctx context.Context, rdb redis.UniversalClient, counter string) error
		want error
		says string
	}{
		{"a hash", func(ctx context.Context, rdb redis.UniversalClient, counter string) error {
			return rdb.HSet(ctx, counter, "f", "1").Err()
		}, lock.ErrWrongType, "holds a hash, not a number"},
		{"a word", setTo("seven"), lock.ErrWrongType, `holds "seven", not a whole number`},
		{"a negative number", setTo("-3"), lock.ErrWrongType, `holds "-3", not a whole number`},
		{"what RaiseFence(MaxInt64) used to write", setTo("9.2233720368547758e+18"), lock.ErrWrongType, "not a whole number"},
		{"2^53", setTo("9007199254740992"), lock.ErrFenceOverflow, "is at 9007199254740992"},
		{"MaxInt64", setTo("9223372036854775807"), lock.ErrFenceOverflow, "is at 9223372036854775807"},
		{"beyond int64", setTo("99999999999999999999"), lock.ErrFenceOverflow, "is at 99999999999999999999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, key := setup(t)
			ctx := labtest.Context(t, 5*time.Second)
			counter := lock.FenceKey(key)
			if err := tt.put(ctx, rdb, counter); err != nil {
				t.Fatal(err)
			}
			before := rdb.Dump(ctx, counter).Val()
			actx, cancel := context.WithCancel(ctx)
			defer cancel()
			l, err := lock.AcquireFenced(actx, rdb, key, lock.FenceKey(key), time.Second)
			if !errors.Is(err, tt.want) || actx.Err() != nil {
				t.Fatalf("got (%v, %v), want %v at once", l, err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), counter) {
				t.Errorf("error %q does not name %s or say %q", err, counter, tt.says)
			}
			if n := rdb.Exists(ctx, key).Val(); n != 0 {
				t.Error("the lock was taken")
			}
			if after := rdb.Dump(ctx, counter).Val(); after != before {
				t.Error("the counter changed")
			}
		})
	}
}

func setTo(v string) func(ctx context.Context, rdb redis.UniversalClient, counter string) error {
	return func(ctx context.Context, rdb redis.UniversalClient, counter string) error {
		return rdb.Set(ctx, counter, v, 0).Err()
	}
}

func TestAcquireFenced_handsOutFencesUpTo2To53Exactly(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 5*time.Second)
	if _, err := lock.RaiseFence(ctx, rdb, lock.FenceKey(key), lock.MaxFence-1); err != nil {
		t.Fatal(err)
	}
	l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if l.Fence != lock.MaxFence {
		t.Errorf("fence %d, want 2^53 = %d", l.Fence, lock.MaxFence)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), time.Minute); !errors.Is(err, lock.ErrFenceOverflow) {
		t.Errorf("the next AcquireFenced: %v, want ErrFenceOverflow", err)
	}
}

func TestRaiseFence_refusesWhatAScriptCannotHoldExactly(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 5*time.Second)
	counter := lock.FenceKey(key)
	for _, n := range []int64{lock.MaxFence + 1, math.MaxInt64} {
		got, err := lock.RaiseFence(ctx, rdb, lock.FenceKey(key), n)
		if !errors.Is(err, lock.ErrFenceOverflow) || got != 0 {
			t.Errorf("RaiseFence(%d) = (%d, %v), want ErrFenceOverflow", n, got, err)
		}
		if !strings.Contains(fmt.Sprint(err), strconv.FormatInt(n, 10)) {
			t.Errorf("error %q does not name %d", err, n)
		}
		if c := rdb.Exists(ctx, counter).Val(); c != 0 {
			t.Fatalf("RaiseFence(%d) wrote the counter", n)
		}
	}
	// The counter still works: the refused raises wrote nothing.
	l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), time.Minute)
	if err != nil || l.Fence != 1 {
		t.Fatalf("AcquireFenced after refused raises = (%v, %v), want fence 1", l, err)
	}
	l.Release(ctx)

	// Exactly 2^53 is stored as the integer it is, not in float notation.
	got, err := lock.RaiseFence(ctx, rdb, lock.FenceKey(key), lock.MaxFence)
	if err != nil || got != lock.MaxFence {
		t.Fatalf("RaiseFence(2^53) = (%d, %v)", got, err)
	}
	if s := rdb.Get(ctx, counter).Val(); s != "9007199254740992" {
		t.Errorf("the counter holds %q, want 9007199254740992", s)
	}
}

func TestRaiseFence_reportsABrokenCounter(t *testing.T) {
	tests := []struct {
		name string
		put  func(ctx context.Context, rdb redis.UniversalClient, counter string) error
		want error // nil: it is repaired and raised
	}{
		{"a hash is left alone", func(ctx context.Context, rdb redis.UniversalClient, counter string) error {
			return rdb.HSet(ctx, counter, "f", "1").Err()
		}, lock.ErrWrongType},
		{"a value above 2^53 is reported", setTo("9007199254740993"), lock.ErrFenceOverflow},
		{"a value beyond int64 is reported", setTo("99999999999999999999"), lock.ErrFenceOverflow},
		{"a float notation above the floor is reported", setTo("9.2233720368547758e+18"), lock.ErrWrongType},
		{"a word is overwritten", setTo("seven"), nil},
		{"a negative number is raised", setTo("-3"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rdb, key := setup(t)
			ctx := labtest.Context(t, 5*time.Second)
			counter := lock.FenceKey(key)
			if err := tt.put(ctx, rdb, counter); err != nil {
				t.Fatal(err)
			}
			before := rdb.Dump(ctx, counter).Val()
			got, err := lock.RaiseFence(ctx, rdb, lock.FenceKey(key), 10)
			if tt.want != nil {
				if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), counter) {
					t.Errorf("got (%d, %v), want %v naming %s", got, err, tt.want, counter)
				}
				if after := rdb.Dump(ctx, counter).Val(); after != before {
					t.Error("the counter changed")
				}
				return
			}
			if err != nil || got != 10 {
				t.Fatalf("got (%d, %v), want 10", got, err)
			}
			if l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), time.Minute); err != nil || l.Fence != 11 {
				t.Errorf("AcquireFenced afterwards = (%v, %v), want fence 11", l, err)
			}
		})
	}
}

// pttlSpy runs every SET NX under a second and every script inside
// MULTI/EXEC, followed by PTTL of its first key. Redis runs a transaction
// without a break, so the PTTL is read microseconds after the command set
// the TTL: it reads that TTL, or one millisecond less when the clock of
// Redis ticked in between.
type pttlSpy struct {
	redis.UniversalClient
	pttl []time.Duration
}

func (s *pttlSpy) tx(ctx context.Context, key string, cmd redis.Cmder) {
	var pttl *redis.DurationCmd
	_, err := s.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Process(ctx, cmd)
		pttl = p.PTTL(ctx, key)
		return nil
	})
	if err == nil {
		s.pttl = append(s.pttl, pttl.Val())
	}
}

func (s *pttlSpy) SetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd {
	if ttl >= time.Second {
		return s.UniversalClient.SetNX(ctx, key, value, ttl) // not under test here
	}
	// What go-redis's SetNX sends for a TTL under a second.
	cmd := redis.NewBoolCmd(ctx, "set", key, value, "px", ttl.Milliseconds(), "nx")
	s.tx(ctx, key, cmd)
	return cmd
}

func (s *pttlSpy) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, append([]any{"evalsha", sha, len(keys)}, append(anys(keys), args...)...)...)
	s.tx(ctx, keys[0], cmd)
	return cmd
}

func (s *pttlSpy) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	cmd := redis.NewCmd(ctx, append([]any{"eval", script, len(keys)}, append(anys(keys), args...)...)...)
	s.tx(ctx, keys[0], cmd)
	return cmd
}

func anys(ss []string) []any {
	a := make([]any, len(ss))
	for i, s := range ss {
		a[i] = s
	}
	return a
}

// A lease shorter than asked is the dangerous direction: 500.9 ms must hold
// the lock for 501 ms, not 500. (Long enough for Refresh to find the lock
// still held, on a loaded machine.)
func TestTTL_aFractionOfAMillisecondIsRoundedUp(t *testing.T) {
	const ttl = 500*time.Millisecond + 900*time.Microsecond
	const want = 501 * time.Millisecond
	calls := []struct {
		name string
		call func(ctx context.Context, spy *pttlSpy, key string) error
	}{
		{"Acquire", func(ctx context.Context, spy *pttlSpy, key string) error {
			_, err := lock.Acquire(ctx, spy, key, ttl)
			return err
		}},
		{"AcquireFenced", func(ctx context.Context, spy *pttlSpy, key string) error {
			_, err := lock.AcquireFenced(ctx, spy, key, lock.FenceKey(key), ttl)
			return err
		}},
		{"Refresh", func(ctx context.Context, spy *pttlSpy, key string) error {
			l, err := lock.Acquire(ctx, spy, key, ttl)
			if err != nil {
				return err
			}
			return l.Refresh(ctx, ttl)
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			rdb, prefix := setup(t)
			ctx := labtest.Context(t, 5*time.Second)
			// Rounded down (PX 500), the PTTL reads 500 or 499, never 501.
			// Rounded up, it reads 501 unless a tick fell between SET and PTTL (about
			// once in a thousand), so a few tries settle it.
			var seen []time.Duration
			for try := range 5 {
				spy := &pttlSpy{UniversalClient: rdb}
				if err := c.call(ctx, spy, fmt.Sprintf("%s:%d", prefix, try)); err != nil {
					t.Fatal(err)
				}
				n := len(spy.pttl)
				if n == 0 {
					t.Fatal("no PTTL was read")
				}
				seen = append(seen, spy.pttl[n-1])
				if spy.pttl[n-1] >= want {
					break
				}
			}
			if got := seen[len(seen)-1]; got != want {
				t.Errorf("PTTL right after the call: %v, want %v", seen, want)
			}
		})
	}
}
