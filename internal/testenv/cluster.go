package testenv

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/launch"
)

// Cluster is a Redis Cluster of the test's own: three masters holding a
// third of the slots each, and a replica of each, every node a
// redis-server on free loopback ports, stopped when the test ends.
type Cluster struct {
	Masters  [3]*RedisServer
	Replicas [3]*RedisServer

	admin map[*RedisServer]*redis.Client // one per node, for setting it up
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
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := Cluster{admin: map[*RedisServer]*redis.Client{}}
	t.Cleanup(func() {
		for _, a := range c.admin {
			a.Close()
		}
	})
	start := func() *RedisServer {
		return tie(t, func(ctx context.Context, g *launch.Group) (*launch.Redis, error) {
			return g.StartClusterNode(ctx, t.TempDir(), "nodes.conf", ClusterNodeTimeout)
		})
	}
	for i := range c.Masters {
		c.Masters[i] = start()
		lo, hi := i*16384/3, (i+1)*16384/3-1
		c.do(t, ctx, c.Masters[i], "CLUSTER", "ADDSLOTSRANGE", lo, hi)
	}
	for i := range c.Replicas {
		c.Replicas[i] = start()
	}
	all := c.nodes()
	for _, s := range all[1:] {
		_, port, _ := net.SplitHostPort(s.Addr)
		c.do(t, ctx, all[0], "CLUSTER", "MEET", "127.0.0.1", port, s.srv.Bus)
	}
	waitFor(t, ctx, "every node to know the other five", func() bool {
		for _, s := range all {
			text, err := c.client(s).ClusterNodes(ctx).Result()
			if err != nil || strings.Count(strings.TrimSpace(text), "\n") != 5 || strings.Contains(text, "handshake") {
				return false
			}
		}
		return true
	})
	for i, r := range c.Replicas {
		id, err := c.client(c.Masters[i]).ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatalf("testenv: CLUSTER MYID on %s: %v", c.Masters[i].Addr, err)
		}
		c.do(t, ctx, r, "CLUSTER", "REPLICATE", id)
	}
	waitFor(t, ctx, "the cluster to be ok and every replica in sync", func() bool {
		for _, s := range all {
			if !strings.Contains(c.client(s).ClusterInfo(ctx).Val(), "cluster_state:ok") {
				return false
			}
		}
		for _, r := range c.Replicas {
			if !strings.Contains(c.client(r).Info(ctx, "replication").Val(), "master_link_status:up") {
				return false
			}
		}
		return true
	})
	return &c
}

// Addrs is the masters' addresses, comma-separated, as REDIS_ADDR names a
// cluster.
func (c *Cluster) Addrs() string {
	return c.Masters[0].Addr + "," + c.Masters[1].Addr + "," + c.Masters[2].Addr
}

// Use points the programs and testenv.Redis at the cluster for the rest of
// the test (REDIS_ADDR, and no REDIS_URL), and returns a client for it.
func (c *Cluster) Use(t testing.TB) *redis.ClusterClient {
	t.Helper()
	t.Setenv("REDIS_URL", "")
	t.Setenv("REDIS_ADDR", c.Addrs())
	return Redis(t).(*redis.ClusterClient)
}

// Promoted reports whether the replica of master i is a master now and
// says cluster_state:ok.
func (c *Cluster) Promoted(ctx context.Context, i int) bool {
	r := c.client(c.Replicas[i])
	role, err := r.Do(ctx, "ROLE").Slice()
	return err == nil && len(role) > 0 && role[0] == "master" &&
		strings.Contains(r.ClusterInfo(ctx).Val(), "cluster_state:ok")
}

func (c *Cluster) nodes() []*RedisServer {
	return append(c.Masters[:], c.Replicas[:]...)
}

// client is a client for node s alone, closed when the test ends.
func (c *Cluster) client(s *RedisServer) *redis.Client {
	if c.admin[s] == nil {
		c.admin[s] = redis.NewClient(&redis.Options{Addr: s.Addr, DialTimeout: time.Second, ReadTimeout: time.Second, MaxRetries: -1})
	}
	return c.admin[s]
}

func (c *Cluster) do(t testing.TB, ctx context.Context, s *RedisServer, args ...any) {
	t.Helper()
	if err := c.client(s).Do(ctx, args...).Err(); err != nil {
		t.Fatalf("testenv: %s on %s: %v", strings.TrimSpace(fmt.Sprintln(args...)), s.Addr, err)
	}
}

func waitFor(t testing.TB, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("testenv: gave up waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
