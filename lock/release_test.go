package lock_test

import (
	"errors"
	"testing"
	"time"

	"example.com/walletlock/lock"
)

func TestParseReleaseMethod(t *testing.T) {
	tests := []struct {
		in      string
		want    lock.ReleaseMethod
		wantErr bool
	}{
		{"auto", lock.ReleaseAuto, false},
		{"lua", lock.ReleaseLua, false},
		{"delex", lock.ReleaseDelex, false},
		{"", "", true},
		{"LUA", "", true},
		{"del", "", true},
	}
	for _, tt := range tests {
		got, err := lock.ParseReleaseMethod(tt.in)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("ParseReleaseMethod(%q) = (%q, %v), want %q and error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestReleaseWith_lua(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	l := mustAcquire(t, rdb, key, 10*time.Second)
	if err := l.ReleaseWith(ctx, lock.ReleaseLua); err != nil {
		t.Fatalf("first release: %v", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("the key is still there")
	}
	if err := l.ReleaseWith(ctx, lock.ReleaseLua); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: got %v, want ErrNotHeld", err)
	}
}

// TestReleaseWith_delex checks whichever DELEX path this server takes:
// Redis before 8.4 has no DELEX (ReleaseDelex must refuse and delete
// nothing, ReleaseAuto must fall back to Lua), Redis 8.4 and later has it
// (ReleaseDelex must compare and delete like the Lua script).
func TestReleaseWith_delex(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	has, err := lock.SupportsDelex(ctx, rdb)
	if err != nil {
		t.Fatalf("SupportsDelex: %v", err)
	}
	again, err := lock.SupportsDelex(ctx, rdb)
	if err != nil || again != has {
		t.Fatalf("second SupportsDelex = (%v, %v), want (%v, nil)", again, err, has)
	}
	t.Logf("server has DELEX: %v", has)

	l := mustAcquire(t, rdb, key, 10*time.Second)
	err = l.ReleaseWith(ctx, lock.ReleaseDelex)
	if has {
		if err != nil {
			t.Fatalf("DELEX release: %v", err)
		}
		if n := rdb.Exists(ctx, key).Val(); n != 0 {
			t.Fatal("DELEX release left the key")
		}
		if err := l.ReleaseWith(ctx, lock.ReleaseDelex); !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("second DELEX release: got %v, want ErrNotHeld", err)
		}
		l = mustAcquire(t, rdb, key, 10*time.Second)
	} else {
		if !errors.Is(err, lock.ErrNoDelex) {
			t.Fatalf("DELEX release without DELEX: got %v, want ErrNoDelex", err)
		}
		if got := holder(t, rdb, key); got != l.Token {
			t.Fatalf("a refused DELEX release changed the key to %q", got)
		}
	}

	// Auto takes DELEX or Lua, whichever the server has; either deletes.
	if err := l.ReleaseWith(ctx, lock.ReleaseAuto); err != nil {
		t.Fatalf("auto release: %v", err)
	}
	if n := rdb.Exists(ctx, key).Val(); n != 0 {
		t.Error("auto release left the key")
	}
	if err := l.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release after auto release: got %v, want ErrNotHeld", err)
	}
}

func TestReleaseWith_unknownMethod(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	l := mustAcquire(t, rdb, key, 10*time.Second)
	if err := l.ReleaseWith(ctx, "del"); err == nil || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("got %v, want an unknown-method error", err)
	}
	if got := holder(t, rdb, key); got != l.Token {
		t.Error("an unknown method touched the key")
	}
	l.Release(ctx)
}

func TestRelease_anotherTokenLeavesTheLock(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	for _, m := range []lock.ReleaseMethod{lock.ReleaseLua, lock.ReleaseAuto} {
		t.Run(string(m), func(t *testing.T) {
			l := mustAcquire(t, rdb, key, 10*time.Second)
			// Someone else's lease now sits on the key, as after an expiry
			// and a new acquisition.
			if err := rdb.Set(ctx, key, "someone-else", 10*time.Second).Err(); err != nil {
				t.Fatal(err)
			}
			if err := l.ReleaseWith(ctx, m); !errors.Is(err, lock.ErrNotHeld) {
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
	if err := l.ReleaseWith(ctx, lock.ReleaseLua); !errors.Is(err, injected) || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release: got %v, want the injected error and not ErrNotHeld", err)
	}
	if err := l.Refresh(ctx); !errors.Is(err, injected) || errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Refresh: got %v, want the injected error and not ErrNotHeld", err)
	}
	if got := holder(t, rdb, key); got != l.Token {
		t.Error("a failed release deleted the key")
	}
}
