//go:build unix

package drill

// The cluster-failover nemesis: a Redis Cluster of the drill's own, three
// masters and a replica each, where the master holding a wallet's slot dies
// with a lock its replica never received, and the cluster promotes the
// replica.
//
// As with Sentinel, each master's replication link runs through a proxy
// (wire.ListenRaw) the drill can cut: each master announces its proxy's
// port, and the drill and the spenders dial the master itself instead
// (SpenderConfig.Direct). The cluster bus is not cut, nor the election.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/wire"
)

// clusterNodeTimeout is how long a silent master has until its replica
// takes over: short, as every node runs on this machine.
const clusterNodeTimeout = time.Second

// NewClusterClient returns a client for a cluster of the drill's own,
// with the same short timeouts as NewClient. direct maps the address a
// master announces (its replication proxy) to the master itself. It
// reloads the slot map often, so that it finds a promoted replica soon.
func NewClusterClient(seeds []string, direct map[string]string) *redis.ClusterClient {
	var d net.Dialer
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: seeds,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if a, ok := direct[addr]; ok {
				addr = a
			}
			return d.DialContext(ctx, network, addr)
		},
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		MaxRetries: -1, PoolSize: 8, ClusterStateReloadInterval: 250 * time.Millisecond})
}

// startCluster starts three masters, each announcing a proxy in front of
// it, and a replica of each, and waits until the cluster is ok.
func (r *runner) startCluster(ctx context.Context) error {
	r.direct = map[string]string{}
	cl, err := r.procs.StartCluster(ctx, r.c.Dir, launch.ClusterSpec{Masters: 3, Replicas: 1, NodeTimeout: clusterNodeTimeout,
		Announce: func(_ int, m *launch.Redis) (int, error) {
			p, err := wire.ListenRaw("127.0.0.1:0", m.Addr)
			if err != nil {
				return 0, err
			}
			r.proxies = append(r.proxies, p)
			r.direct[p.Addr()] = m.Addr
			_, port, _ := net.SplitHostPort(p.Addr())
			return strconv.Atoi(port)
		}})
	r.masters = cl.Masters
	for _, rs := range cl.Replicas {
		r.replicas = append(r.replicas, rs...)
	}
	return err
}

// clusterFailover cuts every replica off, waits for a holder whose lock
// the replica of its wallet's master never received, kills that master,
// and lets the cluster promote the replica.
func (r *runner) clusterFailover(ctx context.Context) (int, string, error) {
	for _, p := range r.proxies {
		p.Cut()
	}
	cut := time.Now().UnixNano()
	rdb := NewClusterClient([]string{r.masters[0].Addr}, r.direct)
	defer rdb.Close()
	var target grabbed
	found, victim := false, -1
	for deadline := time.Now().Add(3 * r.c.TTL); !found; {
		g, ok := r.grabRead(ctx, time.Until(deadline), func(e Event) bool { return e.Start > cut })
		if !ok {
			break
		}
		i := r.masterOf(ctx, rdb, ledger.LockKey(r.c.Prefix, g.e.Wallet))
		if i >= 0 && (r.c.Strategy == Version || !r.clusterReplicaHas(ctx, r.replicas[i], g.e)) {
			target, found, victim = g, true, i
			break
		}
		r.ack(g.s, g.e)
	}
	if victim < 0 { // no such holder: fail over the first wallet's master all the same
		victim = max(r.masterOf(ctx, rdb, ledger.LockKey(r.c.Prefix, r.c.First)), 0)
	}
	if !r.masters[victim].Proc().Kill(3 * time.Second) {
		return 0, "", fmt.Errorf("drill: the master %s did not die", r.masters[victim].Addr)
	}
	for _, p := range r.proxies {
		p.Drop()
	}
	return r.awaitPromotion(ctx, target, found, "the cluster", func() bool { return r.replicas[victim].Promoted(ctx) },
		"cut the replicas off, killed the master of the wallet's slot, the cluster promoted its replica")
}

// masterOf returns the index in r.masters of the master that holds key's
// slot, -1 when the cluster does not say.
func (r *runner) masterOf(ctx context.Context, rdb *redis.ClusterClient, key string) int {
	m, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		return -1
	}
	addr := m.Options().Addr // as announced: the proxy's
	for i, p := range r.proxies {
		if p.Addr() == addr || r.masters[i].Addr == addr {
			return i
		}
	}
	return -1
}

// clusterReplicaHas reports whether a cluster replica holds the lock of
// the read e. A replica answers reads only after READONLY, on the same
// connection: one pipeline.
func (r *runner) clusterReplicaHas(ctx context.Context, replica *launch.Redis, e Event) bool {
	c := NewClient(replica.Addr)
	defer c.Close()
	var get *redis.StringCmd
	c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ReadOnly(ctx)
		get = p.Get(ctx, ledger.LockKey(r.c.Prefix, e.Wallet))
		return nil
	})
	tok, err := get.Result()
	return err == nil && holderID(tok) == e.Holder
}
