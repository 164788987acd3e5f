//go:build unix

package drill

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/ledger"
)

// nemesis injects the run's fault and says what it did. Every fault lands
// on a spend that holds the lock and has read the balance: the spender
// announces that moment and waits for the drill's go-ahead (see
// SpenderConfig.Hold), so the timing is the drill's, not luck's.
func (r *runner) nemesis(ctx context.Context) (faults int, note string, err error) {
	ttl := r.c.TTL
	switch r.c.Nemesis {
	case None:
		return 0, "no fault", nil

	case Pause:
		g, ok := r.grabRead(ctx, 5*time.Second, nil)
		if !ok {
			return 0, "no spend came by to pause", ctx.Err()
		}
		if err := g.s.proc.Pause(); err != nil {
			r.ack(g.s, g.e)
			return 0, "", err
		}
		r.ack(g.s, g.e) // read once the spender runs again
		start := time.Now()
		d := ttl + ttl/2 + time.Duration(r.rng.Int64N(int64(3*ttl/2)))
		sleep(ctx, d)
		// Stay paused until another holder has spent from the wallet (at
		// most 10 TTLs), so that the stale write has something to undo.
		poll(ctx, 10*ttl-d, func() bool { return r.spentSince(g.e.Wallet, start.UnixNano(), g.s, "") != 0 })
		held := time.Since(start)
		if err := g.s.proc.Resume(); err != nil {
			return 1, "", err
		}
		return 1, fmt.Sprintf("paused spender %d for %v (%.1fx the TTL) after it read wallet %d",
			g.s.n, held.Round(time.Millisecond), float64(held)/float64(ttl), g.e.Wallet), nil

	case Crash:
		g, ok := r.grabRead(ctx, 5*time.Second, nil)
		if !ok {
			return 0, "no spend came by to crash", ctx.Err()
		}
		g.s.proc.Kill(3 * time.Second)
		<-g.s.ended
		r.mu.Lock()
		n := len(r.spenders)
		r.mu.Unlock()
		if err := r.startSpender(n); err != nil {
			return 1, "", err
		}
		return 1, fmt.Sprintf("killed spender %d after it read wallet %d, started spender %d", g.s.n, g.e.Wallet, n), nil

	case Restart:
		if isRedlock(r.c.Strategy) {
			return r.restartRedlock(ctx)
		}
		g, ok := r.grabRead(ctx, 5*time.Second, nil)
		if !ok {
			return 0, "no spend came by", ctx.Err()
		}
		start := time.Now()
		err := r.primary.Restart(ctx)
		if err == nil {
			poll(ctx, 3*time.Second+2*ttl, func() bool { return r.spentSince(g.e.Wallet, start.UnixNano(), g.s, "") != 0 })
		}
		r.ack(g.s, g.e)
		return 1, "killed and restarted Redis empty while " + r.holding(g), err

	case Failover:
		return r.failover(ctx)

	case ClusterFailover:
		return r.clusterFailover(ctx)

	case Partition, PartitionMinReplicas:
		return r.partition(ctx)
	}
	return 0, "", fmt.Errorf("drill: no nemesis %q", r.c.Nemesis)
}

// failover cuts the replica off, waits for a holder whose lock the
// replica never received, kills the primary and lets the sentinels
// promote the replica.
func (r *runner) failover(ctx context.Context) (int, string, error) {
	r.proxy.Cut()
	cut := time.Now().UnixNano()
	replica := NewClient(r.replica.Addr)
	defer replica.Close()
	var target grabbed
	found := false
	for deadline := time.Now().Add(3 * r.c.TTL); !found; {
		g, ok := r.grabRead(ctx, time.Until(deadline), func(e Event) bool { return e.Start > cut })
		if !ok {
			break
		}
		if r.c.Strategy == Version || !r.replicaHas(ctx, replica, g.e) {
			target, found = g, true
			break
		}
		r.ack(g.s, g.e)
	}
	if !r.primary.Proc().Kill(3 * time.Second) {
		return 0, "", fmt.Errorf("drill: the primary did not die")
	}
	r.proxy.Drop()
	return r.awaitPromotion(ctx, target, found, "sentinel", func() bool { return r.promoted(ctx) },
		"cut the replica off, killed the primary, sentinel promoted the replica")
}

// awaitPromotion follows a killed primary (or master): it waits until
// promoted says the replica took over, lets the held spend of target go
// on once another spender has spent from its wallet (or after a bound),
// and says what happened. by names who promotes, for the error.
func (r *runner) awaitPromotion(ctx context.Context, target grabbed, found bool, by string, promoted func() bool, did string) (int, string, error) {
	killed := time.Now()
	err := poll(ctx, 20*time.Second, promoted)
	took := time.Since(killed)
	if found {
		if err == nil {
			poll(ctx, 3*time.Second+2*r.c.TTL, func() bool {
				return r.spentSince(target.e.Wallet, killed.UnixNano(), target.s, "") != 0
			})
		}
		r.ack(target.s, target.e)
	}
	if err != nil {
		return 1, "", fmt.Errorf("drill: %s did not promote the replica: %w", by, err)
	}
	what := "no holder took a lock the replica lacked"
	if found {
		what = r.holding(target)
		if r.c.Strategy != Version {
			what += " with a lock the replica never got"
		}
	}
	return 1, fmt.Sprintf("%s in %v; %s", did, took.Round(time.Millisecond), what), nil
}

// holding says who was in the middle of a spend when the fault struck:
// "spender 0 held wallet 7", or for version, which takes no lock,
// "spender 0 had read wallet 7 (version takes no lock)".
func (r *runner) holding(g grabbed) string {
	if r.c.Strategy == Version {
		return fmt.Sprintf("spender %d had read wallet %d (version takes no lock)", g.s.n, g.e.Wallet)
	}
	return fmt.Sprintf("spender %d held wallet %d", g.s.n, g.e.Wallet)
}

// replicaHas reports whether the replica holds the lock of the read e.
func (r *runner) replicaHas(ctx context.Context, replica *redis.Client, e Event) bool {
	tok, err := replica.Get(ctx, ledger.LockKey(r.c.Prefix, e.Wallet)).Result()
	return err == nil && holderID(tok) == e.Holder
}

// promoted reports whether a sentinel names the replica as the primary.
func (r *runner) promoted(ctx context.Context) bool {
	for _, s := range r.sentinels {
		c := NewClient(s.Addr)
		addr, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
		c.Close()
		if err == nil && len(addr) == 2 && strings.Join(addr, ":") == r.replica.Addr {
			return true
		}
	}
	return false
}
