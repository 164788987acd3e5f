//go:build unix

package drill

// The drill's clients of its own servers, and what it asks them.
//
// In the cluster of the cluster-failover nemesis, three masters and a
// replica each, each master's replication link runs through a proxy
// (wire.ListenRaw) that the drill can cut, as with Sentinel: each master
// announces its proxy's port, and the drill and the spenders dial the
// master itself instead (SpenderConfig.Direct). The cluster bus is not
// cut, nor the election.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/wire"
)

// masterName is the name the drill's sentinels monitor the primary under.
const masterName = "drill"

// clusterNodeTimeout is how long a silent master has until its replica
// takes over: short, as every node runs on this machine.
const clusterNodeTimeout = time.Second

// newClient returns a client for one of the drill's servers, with short
// timeouts so that a dead or frozen server fails a call in bounded time,
// and no retries: a retried SET NX would muddle what was granted.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 8})
}

// newFailoverClient returns a client that finds the primary through the
// sentinels and follows a failover.
func newFailoverClient(sentinels []string) *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: masterName, SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 8})
}

// newClusterClient returns a client for a cluster of the drill's own,
// with the same short timeouts as newClient. direct maps the address a
// master announces (its replication proxy) to the master itself. It
// reloads the slot map often, so that it finds a promoted replica soon.
func newClusterClient(seeds []string, direct map[string]string) *redis.ClusterClient {
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

// clusterSpec is the cluster of the cluster-failover nemesis: three
// masters, each announcing a proxy in front of it, and a replica of each.
func (r *runner) clusterSpec() launch.ClusterSpec {
	r.direct = map[string]string{}
	return launch.ClusterSpec{Masters: 3, Replicas: 1, NodeTimeout: clusterNodeTimeout,
		Announce: func(_ int, m *launch.Redis) (int, error) {
			p, err := wire.ListenRaw("127.0.0.1:0", m.Addr)
			if err != nil {
				return 0, err
			}
			r.proxies = append(r.proxies, p)
			r.direct[p.Addr()] = m.Addr
			_, port, _ := net.SplitHostPort(p.Addr())
			return strconv.Atoi(port)
		}}
}

// replicaHas reports whether the replica at addr holds the lock of the
// read e. A cluster replica answers reads only after READONLY, on the
// same connection: one pipeline (elsewhere READONLY fails, and the GET
// is answered all the same).
func (r *runner) replicaHas(ctx context.Context, addr string, e Event) bool {
	c := newClient(addr)
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

// primaryOf returns the address that the Sentinel at addr names as the
// primary, "" when it names none.
func primaryOf(ctx context.Context, addr string) string {
	c := newClient(addr)
	defer c.Close()
	a, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", masterName).StringSlice()
	if err != nil || len(a) != 2 {
		return ""
	}
	return net.JoinHostPort(a[0], a[1])
}
