//go:build unix

package drill

// The cluster-failover nemesis: a Redis Cluster of the drill's own, three
// masters and a replica each, where the master holding a wallet's slot dies
// with a lock its replica never received, and the cluster promotes the
// replica.
//
// As with Sentinel, a replica on loopback would find every write in its
// socket buffer, so each master's replication link runs through a Proxy
// the drill can cut. A cluster node tells its replica where it is by the
// address it announces: each master announces its proxy's port, and the
// clients of the drill and the spenders dial the master itself instead
// (ClusterSpec.Direct). Masters and replicas talk on the cluster bus
// directly, so the election is not cut off.

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/launch"
	"example.com/walletlock/wallet"
)

// clusterNodeTimeout is how long a silent master has until its replica
// takes over: short, as every node runs on this machine.
const clusterNodeTimeout = time.Second

// clusterSlots are the three masters' shares of the 16384 slots.
var clusterSlots = [3][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}

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
	name := func(role string, i int) string {
		return fmt.Sprintf("nodes-%s%d-%d-%d.conf", role, i, r.c.Seed, time.Now().UnixNano())
	}
	start := func(conf string) (*launch.Redis, int, error) {
		s, err := r.procs.StartClusterNode(ctx, r.c.Dir, conf, clusterNodeTimeout)
		if err != nil {
			return nil, 0, err
		}
		return s, s.Bus, nil
	}
	r.direct = map[string]string{}
	var buses []int
	for i := range 3 {
		m, bus, err := start(name("m", i))
		if err != nil {
			return err
		}
		r.masters = append(r.masters, m)
		p, err := StartProxy(m.Addr)
		if err != nil {
			return err
		}
		r.proxies = append(r.proxies, p)
		r.direct[p.Addr] = m.Addr
		c := NewClient(m.Addr)
		err = c.ConfigSet(ctx, "cluster-announce-port", strconv.Itoa(p.Port)).Err()
		if err == nil {
			err = c.ConfigSet(ctx, "cluster-announce-bus-port", strconv.Itoa(bus)).Err()
		}
		if err == nil {
			err = c.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", clusterSlots[i][0], clusterSlots[i][1]).Err()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("drill: set up cluster master %s: %w", m.Addr, err)
		}
		buses = append(buses, bus)
	}
	for i := range 3 {
		s, bus, err := start(name("r", i))
		if err != nil {
			return err
		}
		r.replicas = append(r.replicas, s)
		buses = append(buses, bus)
	}
	first := NewClient(r.masters[0].Addr)
	defer first.Close()
	for i, s := range append(append([]*launch.Redis{}, r.masters...), r.replicas...)[1:] {
		port := s.Port
		if i+1 < 3 {
			port = r.proxies[i+1].Port
		}
		if err := first.Do(ctx, "CLUSTER", "MEET", "127.0.0.1", port, buses[i+1]).Err(); err != nil {
			return fmt.Errorf("drill: CLUSTER MEET %s: %w", s.Addr, err)
		}
	}
	all := append(append([]*launch.Redis{}, r.masters...), r.replicas...)
	if err := poll(ctx, 20*time.Second, func() bool { return everyNodeKnows(ctx, all, 6) }); err != nil {
		return fmt.Errorf("drill: the cluster nodes did not meet: %w", err)
	}
	for i, s := range r.replicas {
		m := NewClient(r.masters[i].Addr)
		id, err := m.ClusterMyID(ctx).Result()
		m.Close()
		c := NewClient(s.Addr)
		if err == nil {
			err = c.ClusterReplicate(ctx, id).Err()
		}
		c.Close()
		if err != nil {
			return fmt.Errorf("drill: make %s a replica of %s: %w", s.Addr, r.masters[i].Addr, err)
		}
	}
	if err := poll(ctx, 20*time.Second, func() bool { return clusterReady(ctx, all, r.replicas) }); err != nil {
		return fmt.Errorf("drill: the cluster did not become ok: %w", err)
	}
	return nil
}

// everyNodeKnows reports whether every node lists n nodes, none of them
// still in the handshake.
func everyNodeKnows(ctx context.Context, nodes []*launch.Redis, n int) bool {
	for _, s := range nodes {
		c := NewClient(s.Addr)
		text, err := c.ClusterNodes(ctx).Result()
		c.Close()
		if err != nil || strings.Count(strings.TrimSpace(text), "\n")+1 != n || strings.Contains(text, "handshake") {
			return false
		}
	}
	return true
}

// clusterReady reports whether every node says cluster_state:ok and every
// replica is in sync with its master.
func clusterReady(ctx context.Context, nodes, replicas []*launch.Redis) bool {
	for _, s := range nodes {
		c := NewClient(s.Addr)
		info, err := c.ClusterInfo(ctx).Result()
		c.Close()
		if err != nil || !strings.Contains(info, "cluster_state:ok") {
			return false
		}
	}
	for _, s := range replicas {
		c := NewClient(s.Addr)
		info, err := c.Info(ctx, "replication").Result()
		c.Close()
		if err != nil || !strings.Contains(info, "master_link_status:up") {
			return false
		}
	}
	return true
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
		i := r.masterOf(ctx, rdb, wallet.LockKey(r.c.Prefix, g.e.Wallet))
		if i >= 0 && (r.c.Strategy == Version || !r.clusterReplicaHas(ctx, r.replicas[i], g.e)) {
			target, found, victim = g, true, i
			break
		}
		r.ack(g.s, g.e)
	}
	if victim < 0 { // no such holder: fail over the first wallet's master all the same
		victim = max(r.masterOf(ctx, rdb, wallet.LockKey(r.c.Prefix, r.c.First)), 0)
	}
	if !r.masters[victim].Proc().Kill(3 * time.Second) {
		return 0, "", fmt.Errorf("drill: the master %s did not die", r.masters[victim].Addr)
	}
	for _, p := range r.proxies {
		p.Drop()
	}
	return r.awaitPromotion(ctx, target, found, "the cluster", func() bool { return r.clusterPromoted(ctx, r.replicas[victim]) },
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
		if p.Addr == addr || r.masters[i].Addr == addr {
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
		get = p.Get(ctx, wallet.LockKey(r.c.Prefix, e.Wallet))
		return nil
	})
	tok, err := get.Result()
	return err == nil && holderID(tok) == e.Holder
}

// clusterPromoted reports whether the replica is now a master and the
// cluster is ok in its eyes.
func (r *runner) clusterPromoted(ctx context.Context, replica *launch.Redis) bool {
	c := NewClient(replica.Addr)
	defer c.Close()
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		return false
	}
	return strings.Contains(c.ClusterInfo(ctx).Val(), "cluster_state:ok")
}
