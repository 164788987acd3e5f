//go:build unix

package drill

import (
	"context"
	"fmt"
	"slices"
	"time"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/wire"
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
		err := g.s.proc.Pause()
		r.ack(g) // read once the spender runs again
		if err != nil {
			return 0, "", err
		}
		start := time.Now()
		d := ttl + ttl/2 + time.Duration(r.rng.Int64N(int64(3*ttl/2)))
		sleep(ctx, d)
		// Stay paused until another holder has spent from the wallet (at
		// most 10 TTLs), so that the stale write has something to undo.
		r.spentSince(ctx, g, start, 10*ttl-d, "")
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
		err := r.masters[0].Restart(ctx)
		if err == nil {
			r.spentSince(ctx, g, start, 3*time.Second+2*ttl, "")
		}
		r.ack(g)
		return 1, "killed and restarted Redis empty while " + r.holding(g), err

	case Failover, ClusterFailover:
		return r.failover(ctx)

	case Partition, PartitionMinReplicas:
		return r.partition(ctx)
	}
	return 0, "", fmt.Errorf("drill: no nemesis %q", r.c.Nemesis)
}

// failover cuts the replicas off, waits for a holder whose lock the
// replica of its primary never received, kills that primary and waits
// until the replica is promoted: by the sentinels (Failover) or by the
// cluster, whose masters[i] serves a share of the slots (ClusterFailover).
// It then lets the held spend go on once another spender has spent from
// its wallet, or after a bound.
func (r *runner) failover(ctx context.Context) (int, string, error) {
	for _, p := range r.proxies {
		p.Cut()
	}
	cut := time.Now().UnixNano()
	masterOf := func(int64) int { return 0 } // the index in r.masters of the master of a wallet's lock
	by, did := "sentinel", "cut the replica off, killed the primary, sentinel promoted the replica"
	if r.c.Nemesis == ClusterFailover {
		rdb := newClusterClient(r.sc.Cluster, r.direct)
		defer rdb.Close()
		masterOf = func(wallet int64) int {
			m, err := rdb.MasterForKey(ctx, ledger.LockKey(r.c.Prefix, wallet))
			if err != nil {
				return -1
			}
			addr := m.Options().Addr // as announced: the proxy's
			return slices.IndexFunc(r.proxies, func(p *wire.Proxy) bool { return p.Addr() == addr || r.direct[p.Addr()] == addr })
		}
		by, did = "the cluster", "cut the replicas off, killed the master of the wallet's slot, the cluster promoted its replica"
	}
	var target grabbed
	found, victim := false, -1
	for deadline := time.Now().Add(3 * r.c.TTL); !found; {
		g, ok := r.grabRead(ctx, time.Until(deadline), func(e Event) bool { return e.Start > cut })
		if !ok {
			break
		}
		i := masterOf(g.e.Wallet)
		if i >= 0 && (r.c.Strategy == Version || !r.replicaHas(ctx, r.replicas[i].Addr, g.e)) {
			target, found, victim = g, true, i
			break
		}
		r.ack(g)
	}
	if victim < 0 { // no such holder: fail over the first wallet's master all the same
		victim = max(masterOf(r.c.First), 0)
	}
	if !r.masters[victim].Proc().Kill(3 * time.Second) {
		return 0, "", fmt.Errorf("drill: the primary %s did not die", r.masters[victim].Addr)
	}
	for _, p := range r.proxies {
		p.Drop()
	}
	replica := r.replicas[victim]
	promoted := func() bool {
		if r.c.Nemesis == ClusterFailover {
			return replica.Promoted(ctx)
		}
		return slices.ContainsFunc(r.sc.Sentinels, func(s string) bool { return primaryOf(ctx, s) == replica.Addr })
	}
	killed := time.Now()
	err := poll(ctx, 20*time.Second, promoted)
	took := time.Since(killed)
	if found {
		if err == nil {
			r.spentSince(ctx, target, killed, 3*time.Second+2*r.c.TTL, "")
		}
		r.ack(target)
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
