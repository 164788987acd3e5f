package labtest

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/launch"
)

// Cluster is a Redis Cluster of the test's own: three masters holding a
// third of the slots each, and a replica of each, every node a
// redis-server on free loopback ports, stopped when the test ends.
type Cluster struct {
	Masters  [3]*RedisServer
	Replicas [3]*RedisServer
}

// ClusterNodeTimeout is how long a master of a Cluster may stay silent
// before its replica takes over: short, as every node runs on this machine.
// A promotion follows a master's death within two or three of these.
const ClusterNodeTimeout = time.Second

// StartCluster starts a Cluster and waits until every node says
// cluster_state:ok and every replica is in sync. Without a redis-server
// binary the test skips, or fails when CI is set.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	if _, err := launch.RedisBinary(); err != nil {
		testenv.Missing(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dir := t.TempDir() // removed after the nodes are killed, not while they write to it
	cl, err := group(t).StartCluster(ctx, dir, launch.ClusterSpec{Masters: 3, Replicas: 1, NodeTimeout: ClusterNodeTimeout})
	for _, s := range cl.Masters {
		logOnFailure(t, s.Log)
	}
	for _, r := range cl.Replicas {
		for _, s := range r {
			logOnFailure(t, s.Log)
		}
	}
	if err != nil {
		t.Fatalf("labtest: %v", err)
	}
	var c Cluster
	for i := range c.Masters {
		c.Masters[i] = &RedisServer{Addr: cl.Masters[i].Addr, t: t, srv: cl.Masters[i]}
		c.Replicas[i] = &RedisServer{Addr: cl.Replicas[i][0].Addr, t: t, srv: cl.Replicas[i][0]}
	}
	return &c
}

// Addrs is the masters' addresses, comma-separated, as REDIS_ADDR names a
// cluster.
func (c *Cluster) Addrs() string {
	return c.Masters[0].Addr + "," + c.Masters[1].Addr + "," + c.Masters[2].Addr
}

// Use points the programs and labtest.Redis at the cluster for the rest of
// the test (REDIS_ADDR, and no REDIS_URL), and returns a client for it.
func (c *Cluster) Use(t testing.TB) *redis.ClusterClient {
	t.Helper()
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", c.Addrs())
	return testenv.Redis(t).(*redis.ClusterClient)
}

// Promoted reports whether the replica of master i is a master now and
// says cluster_state:ok.
func (c *Cluster) Promoted(ctx context.Context, i int) bool {
	return c.Replicas[i].srv.Promoted(ctx)
}
