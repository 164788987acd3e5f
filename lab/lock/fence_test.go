package lock_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
)

func TestAcquireFenced_fencesGrowWithAcquisitionOrder(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	const n = 100
	// Every caller gets its turn: 100 hand-overs of a few milliseconds each.
	ctx := labtest.Context(t, time.Minute)

	var (
		mu     sync.Mutex
		fences []int64 // in the order the lock was taken
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), 10*time.Second)
			if err != nil {
				t.Errorf("AcquireFenced: %v", err)
				return
			}
			// Recorded while holding the lock, so the slice is in
			// acquisition order.
			mu.Lock()
			fences = append(fences, l.Fence)
			mu.Unlock()
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
		})
	}
	close(start)
	wg.Wait()

	if len(fences) != n {
		t.Fatalf("%d of %d callers got the lock", len(fences), n)
	}
	for i, f := range fences {
		// A fresh counter hands out 1, 2, 3...: unique and increasing.
		if f != int64(i+1) {
			t.Fatalf("acquisition %d got fence %d, want %d; fences in order: %v", i+1, f, i+1, fences)
		}
	}
}

func TestAcquireFenced_printingShowsTheFence(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if got, want := fmt.Sprintf("%+v", l), "Key:"+key+" Fence:1 Attempts:1"; !strings.Contains(got, want) {
		t.Errorf("%%+v = %q, want it to show %q", got, want)
	}
}

func TestRaiseFence_raisesNeverLowers(t *testing.T) {
	rdb, key := setup(t)
	ctx := labtest.Context(t, 10*time.Second)
	steps := []struct {
		name    string
		raiseTo int64 // 0: acquire instead
		want    int64
	}{
		{"an absent counter is raised", 5, 5},
		{"the next acquisition continues from there", 0, 6},
		{"a lower floor changes nothing", 3, 6},
		{"an equal floor changes nothing", 6, 6},
		{"a higher floor raises it", 10, 10},
		{"the next acquisition continues from there again", 0, 11},
	}
	for _, s := range steps {
		var got int64
		if s.raiseTo == 0 {
			l, err := lock.AcquireFenced(ctx, rdb, key, lock.FenceKey(key), 10*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			got = l.Fence
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: Release: %v", s.name, err)
			}
		} else {
			var err error
			if got, err = lock.RaiseFence(ctx, rdb, lock.FenceKey(key), s.raiseTo); err != nil {
				t.Fatalf("%s: RaiseFence(%d): %v", s.name, s.raiseTo, err)
			}
		}
		if got != s.want {
			t.Errorf("%s: got %d, want %d", s.name, got, s.want)
		}
	}
	if _, err := lock.RaiseFence(ctx, rdb, "", 1); !errors.Is(err, lock.ErrInvalid) || err.Error() != "lock: empty fence key" {
		t.Errorf("RaiseFence with an empty key: got %v, want ErrInvalid, \"lock: empty key\"", err)
	}
}

// hashedPart is the part of a key that Redis Cluster hashes to pick a slot:
// the text between the first "{" and the next "}" when it is not empty,
// otherwise the whole key. Keys with the same hashed part share a slot.
func hashedPart(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// strayBraceKeys hold a "}" but no hash tag: Redis Cluster hashes them
// whole, and no name built from them can share their slot.
var strayBraceKeys = []string{"probe:lock}7", "a{}b", "}{", "}", "{}", "lock:{}:7", "x}{y"}

func TestFenceKey_sharesTheSlot(t *testing.T) {
	tests := []struct {
		name, key, want string
	}{
		{"with a hash tag", "app:lock:{wallet:42}", "app:lock:{wallet:42}:fence"},
		{"with the hash tag first", "{wallet:42}:lock", "{wallet:42}:lock:fence"},
		{"that is a hash tag", "{x}", "{x}:fence"},
		{"with a close brace before its hash tag", "a}{b}", "a}{b}:fence"},
		{"without a hash tag", "lock:7", "{lock:7}:fence"},
		{"with an open brace only", "lock:{7", "{lock:{7}:fence"},
		{"that is an open brace", "{", "{{}:fence"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lock.FenceKey(tt.key)
			if got != tt.want {
				t.Errorf("FenceKey(%q) = %q, want %q", tt.key, got, tt.want)
			}
			if hashedPart(got) != hashedPart(tt.key) {
				t.Errorf("FenceKey(%q) = %q hashes %q, the lock key hashes %q", tt.key, got, hashedPart(got), hashedPart(tt.key))
			}
		})
	}
	for _, key := range strayBraceKeys {
		if got := lock.FenceKey(key); got != "" {
			t.Errorf("FenceKey(%q) = %q, want \"\": no counter can share its slot", key, got)
		}
	}
}

// A key with a "}" but no hash tag is refused by every call that takes a
// key, before it sends anything, in one line that names the key: its
// fence counter or fair queue would land in another slot of a cluster.
// (lock/fair's tests check the fair lock's Acquire the same way.)
func TestStrayBrace_refusedBeforeAnyCall(t *testing.T) {
	ctx := labtest.Context(t, 10*time.Second)
	calls := map[string]func(c lock.Client, key string) error{
		"Acquire": func(c lock.Client, key string) error {
			_, err := lock.Acquire(ctx, c, key, time.Second)
			return err
		},
		"AcquireFenced": func(c lock.Client, key string) error {
			_, err := lock.AcquireFenced(ctx, c, key, lock.FenceKey(key), time.Second)
			return err
		},
	}
	for name, call := range calls {
		for _, key := range strayBraceKeys {
			c := &faultyClient{} // no Redis behind it: any call would panic
			err := call(c, key)
			if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(fmt.Sprint(err), `has a "}" but no hash tag`) {
				t.Errorf("%s(%q) = %v, want ErrInvalid for a stray brace", name, key, err)
				continue
			}
			if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%q", key)) || strings.Contains(msg, "\n") {
				t.Errorf("%s(%q): %q, want one line naming the key", name, key, msg)
			}
			if n := c.calls.Load(); n != 0 {
				t.Errorf("%s(%q) made %d calls, want none", name, key, n)
			}
			if name == "AcquireFenced" && key == strayBraceKeys[0] {
				t.Log(err)
			}
		}
	}
}
