package redlock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/redlock"
	"example.com/walletlock/lab/lock"
)

// startRedlock starts live redis-servers of the test's own and names dead
// addresses where nothing listens (labtest.DeadAddr), and returns Nodes
// over all of them,
// live ones first. Each test runs on servers of its own, so its keys
// need no prefix.
func startRedlock(t *testing.T, live, dead int) *redlock.Nodes {
	t.Helper()
	var addrs []string
	for range live {
		addrs = append(addrs, labtest.StartRedis(t).Addr)
	}
	for range dead {
		addrs = append(addrs, labtest.DeadAddr(t))
	}
	clients := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		clients[i] = redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1, DialTimeout: time.Second})
	}
	n := redlock.NewNodes(addrs, clients...)
	t.Cleanup(n.Close)
	return n
}

// holders returns how many nodes hold key.
func holders(t *testing.T, n *redlock.Nodes, key string) int {
	t.Helper()
	held := 0
	for _, c := range n.Clients() {
		v, err := c.Exists(t.Context(), key).Result()
		if err == nil && v == 1 {
			held++
		}
	}
	return held
}

func TestRedlockAcquire_fiftyGoroutinesExactlyOneWins(t *testing.T) {
	n := startRedlock(t, 3, 0)
	var won atomic.Int32
	var wg sync.WaitGroup
	// The losers try until a winner has the lock (or a minute passes: split
	// votes may cost a few rounds on a busy machine), then stop.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for range 50 {
		wg.Go(func() {
			if _, err := n.Acquire(ctx, "lock:{wallet:1}", time.Minute); err == nil {
				won.Add(1)
				cancel()
			} else if ctx.Err() == nil {
				t.Errorf("a loser's error = %v, before any winner and before its context ended", err)
			}
		})
	}
	wg.Wait()
	if got := won.Load(); got != 1 {
		t.Errorf("%d goroutines took the lock, want exactly 1", got)
	}
	// Not always all three: a loser may hold one node for a moment when
	// the winner asks it, and the winner then holds a bare majority.
	if got := holders(t, n, "lock:{wallet:1}"); got < n.Quorum() {
		t.Errorf("%d of 3 nodes hold the key, want a majority", got)
	}
}

func TestRedlockAcquire_aMajorityOfNodesIsEnough(t *testing.T) {
	n := startRedlock(t, 2, 1)
	l, err := n.Acquire(t.Context(), "k", time.Second)
	if err != nil {
		t.Fatalf("Acquire with 2 of 3 nodes up = %v, want the lock", err)
	}
	if err := l.Extend(t.Context()); err != nil {
		t.Errorf("Extend with 2 of 3 nodes up = %v, want nil", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release with 2 of 3 nodes up = %v, want nil", err)
	}
	if got := holders(t, n, "k"); got != 0 {
		t.Errorf("%d nodes still hold the key after Release, want 0", got)
	}
}

func TestRedlockAcquire_fewerThanAMajoritySaysHowManyAnswered(t *testing.T) {
	n := startRedlock(t, 1, 2)
	start := time.Now()
	_, err := n.Acquire(t.Context(), "k", time.Second)
	if !errors.Is(err, redlock.ErrNoQuorum) {
		t.Fatalf("Acquire with 1 of 3 nodes up = %v, want ErrNoQuorum", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "1 of 3 nodes answered, 2 needed") || strings.Contains(msg, "\n") {
		t.Errorf("error = %q, want one line saying 1 of 3 nodes answered, 2 needed", msg)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("Acquire took %v to fail, want it to fail at the first attempt", took)
	}
	if got := holders(t, n, "k"); got != 0 {
		t.Errorf("the live node still holds the key of a failed Acquire")
	}
}

func TestRedlockAcquire_waitsForARelease(t *testing.T) {
	n := startRedlock(t, 3, 0)
	first, err := n.Acquire(t.Context(), "k", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(100*time.Millisecond, func() { first.Release(context.Background()) })
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	second, err := n.Acquire(ctx, "k", 10*time.Second)
	if err != nil {
		t.Fatalf("second Acquire = %v, want the lock once the first is released", err)
	}
	if second.Attempts < 2 {
		t.Errorf("second Acquire made %d attempts, want at least 2 (it found the lock taken)", second.Attempts)
	}
	if second.Token() == first.Token() {
		t.Error("two holders share a token")
	}
}

func TestRedlockRelease_afterExpiryIsNotHeld(t *testing.T) {
	n := startRedlock(t, 3, 0)
	l, err := n.Acquire(t.Context(), "k", 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	for holders(t, n, "k") > 0 { // the lease expires on every node
		time.Sleep(50 * time.Millisecond)
	}
	if err := l.Extend(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Extend after expiry = %v, want lock.ErrNotHeld", err)
	}
	if err := l.Release(t.Context()); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release after expiry = %v, want lock.ErrNotHeld", err)
	}
	var nilLock *redlock.Lock
	if err := nilLock.Release(t.Context()); err != nil {
		t.Errorf("Release of a nil Lock = %v, want nil", err)
	}
}

func TestDialRedlock_saysHowManyNodesAnswerAndTheFix(t *testing.T) {
	live := labtest.StartRedis(t).Addr
	addrs := []string{live, labtest.DeadAddr(t), labtest.DeadAddr(t)}
	_, err := redlock.Dial(t.Context(), addrs, nil)
	if !errors.Is(err, redlock.ErrNodesDown) {
		t.Fatalf("Dial = %v, want ErrNodesDown", err)
	}
	msg := err.Error()
	for _, want := range []string{"nodes down: 1 of 3 answer", addrs[1], addrs[2], "needs a majority, 2", "make redlock-up", "REDLOCK_ADDRS"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error = %q, want it to say %q", msg, want)
		}
	}
	if strings.Contains(msg, live) {
		t.Errorf("error = %q names the node that answers", msg)
	}
}

// Redlock tolerates a minority down, from the start too: DialRedlock goes on
// and says in one line how many answer.
func TestDialRedlock_oneNodeOfThreeDownRuns(t *testing.T) {
	addrs := []string{labtest.StartRedis(t).Addr, labtest.StartRedis(t).Addr, labtest.DeadAddr(t)}
	n, err := redlock.Dial(t.Context(), addrs, nil)
	if err != nil {
		t.Fatalf("Dial with 2 of 3 nodes up = %v, want the nodes", err)
	}
	defer n.Close()
	msg := n.Degraded()
	for _, want := range []string{"2 of 3 Redlock nodes answer", addrs[2] + " does not", "majority"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("Degraded() = %q, want one line saying %q", msg, want)
		}
	}
	l, err := n.Acquire(t.Context(), "k", time.Second)
	if err != nil {
		t.Fatalf("Acquire with 2 of 3 nodes up = %v, want the lock", err)
	}
	if err := l.Release(t.Context()); err != nil {
		t.Errorf("Release = %v", err)
	}

	everyone := []string{addrs[0], addrs[1], labtest.StartRedis(t).Addr}
	all, err := redlock.Dial(t.Context(), everyone, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer all.Close()
	if msg := all.Degraded(); msg != "" {
		t.Errorf("Degraded() with every node up = %q, want \"\"", msg)
	}
}

// One server behind two addresses is one node, whatever the names say:
// its run_id gives it away.
func TestDialRedlock_oneServerBehindTwoAddressesIsRefused(t *testing.T) {
	a, b := labtest.StartRedis(t).Addr, labtest.StartRedis(t).Addr
	_, port, _ := net.SplitHostPort(a)
	alias := "localhost:" + port
	_, err := redlock.Dial(t.Context(), []string{a, alias, b}, nil)
	if !errors.Is(err, env.ErrSameRedlockNode) {
		t.Fatalf("Dial(%s, %s, %s) = %v, want ErrSameRedlockNode", a, alias, b, err)
	}
	msg := err.Error()
	for _, want := range []string{a + " and " + alias, "one Redis server", "run_id", "REDLOCK_ADDRS"} {
		if !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
			t.Errorf("error = %q, want one line saying %q", msg, want)
		}
	}
}
