package lock_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lock"
)

func TestAcquireFenced_fencesGrowWithAcquisitionOrder(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	const n = 100
	// Every caller gets its turn: 100 hand-overs of a few milliseconds each.
	ctx := ctxFor(t, time.Minute)

	var (
		mu     sync.Mutex
		fences []int64 // in the order the lock was taken
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for range n {
		wg.Go(func() {
			<-start
			l, err := lock.AcquireFenced(ctx, rdb, key, 10*time.Second)
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

func TestAcquireFenced_stringShowsTheFence(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
	l, err := lock.AcquireFenced(ctx, rdb, key, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release(ctx)
	if want := "lock " + key + " (fence 1)"; l.String() != want {
		t.Errorf("String() = %q, want %q", l.String(), want)
	}
}

func TestRaiseFence_raisesNeverLowers(t *testing.T) {
	rdb, key := setup(t)
	ctx := ctxFor(t, 10*time.Second)
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
			l, err := lock.AcquireFenced(ctx, rdb, key, 10*time.Second)
			if err != nil {
				t.Fatalf("%s: %v", s.name, err)
			}
			got = l.Fence
			if err := l.Release(ctx); err != nil {
				t.Fatalf("%s: Release: %v", s.name, err)
			}
		} else {
			var err error
			if got, err = lock.RaiseFence(ctx, rdb, key, s.raiseTo); err != nil {
				t.Fatalf("%s: RaiseFence(%d): %v", s.name, s.raiseTo, err)
			}
		}
		if got != s.want {
			t.Errorf("%s: got %d, want %d", s.name, got, s.want)
		}
	}
	if _, err := lock.RaiseFence(ctx, rdb, "", 1); err != lock.ErrEmptyKey {
		t.Errorf("RaiseFence with an empty key: got %v, want ErrEmptyKey", err)
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

func TestFenceKey_sharesTheSlot(t *testing.T) {
	tests := []struct {
		name, key, want string
		sameSlot        bool
	}{
		{"with a hash tag", "app:lock:{wallet:42}", "app:lock:{wallet:42}:fence", true},
		{"with the hash tag first", "{wallet:42}:lock", "{wallet:42}:lock:fence", true},
		{"without a hash tag", "lock:7", "{lock:7}:fence", true},
		{"with an open brace only", "lock:{7", "{lock:{7}:fence", true},
		// Redis hashes such a key whole, and no other key can have a
		// "}" in its hashed part: no fence key can share its slot. The
		// doc comment says to give such keys a hash tag.
		{"empty braces are no hash tag", "lock:{}:7", "{lock:{}:7}:fence", false},
		{"a close brace without a hash tag", "lock:}7", "{lock:}7}:fence", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := lock.FenceKey(tt.key)
			if got != tt.want {
				t.Errorf("FenceKey(%q) = %q, want %q", tt.key, got, tt.want)
			}
			if same := hashedPart(got) == hashedPart(tt.key); same != tt.sameSlot {
				t.Errorf("FenceKey(%q) = %q hashes %q, the lock key hashes %q: same slot %v, want %v",
					tt.key, got, hashedPart(got), hashedPart(tt.key), same, tt.sameSlot)
			}
		})
	}
}

// On a cluster, a key whose fence counter lands in another slot (see
// FenceKey) makes the acquire script fail at once, in one line that names
// CROSSSLOT, and leaves nothing behind. `make test-cluster` runs it.
func TestAcquireFenced_keysInTwoSlotsFailWithCROSSSLOT(t *testing.T) {
	t.Parallel()
	rdb, key := setup(t)
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Skip("REDIS_ADDR names one server, where every key shares the one node; `make test-cluster` runs this on a cluster")
	}
	key = strings.TrimSuffix(key, "lock:{wallet:1}") + "lock:{}:7" // "{}" is no hash tag
	ctx := ctxFor(t, 10*time.Second)
	start := time.Now()
	l, err := lock.AcquireFenced(ctx, rdb, key, 10*time.Second)
	if err == nil {
		l.Release(ctx)
		t.Fatalf("AcquireFenced(%s) on a cluster succeeded, want CROSSSLOT", key)
	}
	t.Log(err)
	if msg := err.Error(); !strings.Contains(msg, "CROSSSLOT") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line that names CROSSSLOT", msg)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("AcquireFenced took %v to give up: a CROSSSLOT is no reason to retry", took)
	}
	// One EXISTS of both keys would itself be CROSSSLOT: one by one.
	for _, k := range []string{key, lock.FenceKey(key)} {
		if n := rdb.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("%s was left behind", k)
		}
	}
}
