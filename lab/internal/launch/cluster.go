package launch

// A Redis Cluster of ours, joined the way `redis-cli --cluster create`
// joins one: each master takes its share of the 16384 slots, the first
// node meets the others, each replica is told whom to replicate, and the
// set-up returns once every node agrees. StartCluster does it for nodes
// of a Group (the drill, the tests), CreateCluster for nodes that outlive
// the program (`make cluster-up`).

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
)

// ClusterSpec is the shape of a cluster StartCluster starts.
type ClusterSpec struct {
	Masters     int           // masters, each serving an equal share of the slots
	Replicas    int           // replicas of each master
	NodeTimeout time.Duration // how long a master may stay silent before a replica takes over

	// Announce, when not nil, is called with each master as soon as it
	// runs and returns the port the master announces instead of its own,
	// to its replicas and to clients (the drill's replication proxy).
	Announce func(i int, master *Redis) (port int, err error)
}

// Cluster is a Redis Cluster whose nodes are processes of a Group.
type Cluster struct {
	Masters  []*Redis   // Masters[i] serves the i-th share of the slots
	Replicas [][]*Redis // Replicas[i] replicate Masters[i]
}

// StartCluster starts spec's masters and replicas as cluster nodes with
// their files in dir (see StartClusterNode), joins them into one cluster
// and returns once it is ready (see joinCluster). On an error the Cluster
// holds the nodes started so far, whose logs may say what went wrong.
func (g *Group) StartCluster(ctx context.Context, dir string, spec ClusterSpec) (*Cluster, error) {
	c := &Cluster{Replicas: make([][]*Redis, spec.Masters)}
	start := func(name string) (*Redis, clusterNode, error) {
		conf := fmt.Sprintf("nodes-%s-%d-%d.conf", name, os.Getpid(), time.Now().UnixNano())
		s, err := g.StartClusterNode(ctx, dir, conf, spec.NodeTimeout)
		if err != nil {
			return nil, clusterNode{}, err
		}
		return s, clusterNode{addr: s.Addr, bus: s.Bus}, nil
	}
	var masters, replicas []clusterNode
	for i := range spec.Masters {
		m, n, err := start(fmt.Sprintf("m%d", i))
		if err != nil {
			return c, err
		}
		c.Masters = append(c.Masters, m)
		if spec.Announce != nil {
			if n.announce, err = spec.Announce(i, m); err != nil {
				return c, err
			}
		}
		masters = append(masters, n)
	}
	for j := range spec.Replicas {
		for i := range spec.Masters { // the k-th replica node replicates master k % Masters
			s, n, err := start(fmt.Sprintf("r%d-%d", i, j))
			if err != nil {
				return c, err
			}
			c.Replicas[i] = append(c.Replicas[i], s)
			replicas = append(replicas, n)
		}
	}
	return c, joinCluster(ctx, masters, replicas)
}

// CreateCluster joins the empty cluster nodes at addrs (host:port, each
// with its bus on port + 10000) into one cluster with replicas replicas
// per master, as `redis-cli --cluster create --cluster-replicas` would:
// the first len(addrs)/(replicas+1) nodes are the masters, and the k-th
// node after them replicates master k % masters. It returns once the
// cluster is ready, as StartCluster does.
func CreateCluster(ctx context.Context, addrs []string, replicas int) error {
	m := len(addrs) / (replicas + 1)
	if replicas < 0 || m == 0 || m*(replicas+1) != len(addrs) {
		return fmt.Errorf("launch: %d nodes do not make masters with %d replicas each", len(addrs), replicas)
	}
	nodes := make([]clusterNode, len(addrs))
	for i, a := range addrs {
		nodes[i] = clusterNode{addr: a}
	}
	return joinCluster(ctx, nodes[:m], nodes[m:])
}

// clusterNode is a node as joinCluster sees it.
type clusterNode struct {
	addr     string // host:port, where we reach it
	announce int    // the port it announces, when not its own
	bus      int    // its cluster bus port, when not its port + 10000
}

// setupWait bounds each wait for servers to find each other: a cluster's
// nodes, a replica and its primary, Sentinels.
const setupWait = 30 * time.Second

// joinCluster hands out the slots among masters, meets every node, makes
// replica k a replica of master k % len(masters), and waits until the
// cluster is ready: every node knows all the others and which are
// replicas, and says cluster_state:ok, and every replica is in sync.
func joinCluster(ctx context.Context, masters, replicas []clusterNode) error {
	all := append(slices.Clone(masters), replicas...)
	clients := make([]*redis.Client, len(all))
	for i, n := range all {
		clients[i] = adminClient(n.addr)
	}
	defer func() {
		for _, c := range clients {
			c.Close()
		}
	}()
	do := func(i int, args ...any) error {
		if err := clients[i].Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("launch: %s on %s: %w", strings.TrimSpace(fmt.Sprintln(args...)), all[i].addr, err)
		}
		return nil
	}
	for i, n := range all {
		if n.announce != 0 { // only StartCluster's nodes, whose bus port is known
			if err := do(i, "CONFIG", "SET", "cluster-announce-port", n.announce, "cluster-announce-bus-port", n.bus); err != nil {
				return err
			}
		}
	}
	for i := range masters {
		lo, hi := slotShare(i, len(masters))
		if err := do(i, "CLUSTER", "ADDSLOTSRANGE", lo, hi); err != nil {
			return err
		}
	}
	for _, n := range all[1:] {
		host, port, err := net.SplitHostPort(n.addr)
		if err != nil {
			return fmt.Errorf("launch: cluster node %q: %w", n.addr, err)
		}
		meet := []any{"CLUSTER", "MEET", host, port}
		if n.announce != 0 {
			meet[3] = n.announce
		}
		if n.bus != 0 {
			meet = append(meet, n.bus)
		}
		if err := do(0, meet...); err != nil {
			return err
		}
	}
	err := await(ctx, "the cluster nodes did not meet", func() string {
		for i, c := range clients {
			text, err := c.ClusterNodes(ctx).Result()
			if err != nil {
				return fmt.Sprintf("%s: %v", all[i].addr, err)
			}
			if known := strings.Count(strings.TrimSpace(text), "\n") + 1; known != len(all) || strings.Contains(text, "handshake") {
				return fmt.Sprintf("%s knows %d of %d nodes, or some only by a handshake", all[i].addr, known, len(all))
			}
		}
		return ""
	})
	if err != nil {
		return err
	}
	for k := range replicas {
		m := k % len(masters)
		id, err := clients[m].ClusterMyID(ctx).Result()
		if err != nil {
			return fmt.Errorf("launch: CLUSTER MYID on %s: %w", masters[m].addr, err)
		}
		if err := do(len(masters)+k, "CLUSTER", "REPLICATE", id); err != nil {
			return err
		}
	}
	return await(ctx, "the cluster was not ready", func() string {
		for i, c := range clients {
			info, err := c.ClusterInfo(ctx).Result()
			if err != nil {
				return fmt.Sprintf("%s: %v", all[i].addr, err)
			}
			for _, want := range [][2]string{{"cluster_state", "ok"},
				{"cluster_known_nodes", strconv.Itoa(len(all))}, {"cluster_size", strconv.Itoa(len(masters))}} {
				if got := env.InfoField(info, want[0]); got != want[1] {
					return fmt.Sprintf("%s says %s:%s, not %s", all[i].addr, want[0], got, want[1])
				}
			}
			if seen := replicasSeen(c.ClusterNodes(ctx).Val()); seen != len(replicas) {
				return fmt.Sprintf("%s sees %d replicas of %d", all[i].addr, seen, len(replicas))
			}
		}
		for k := range replicas {
			c := clients[len(masters)+k]
			if got := env.InfoField(c.Info(ctx, "replication").Val(), "master_link_status"); got != "up" {
				return fmt.Sprintf("%s says master_link_status:%s", replicas[k].addr, got)
			}
		}
		return ""
	})
}

// replicasSeen counts the replicas in the text of CLUSTER NODES: the lines
// whose flags (the third field) say slave.
func replicasSeen(nodes string) int {
	n := 0
	for line := range strings.SplitSeq(nodes, "\n") {
		if f := strings.Fields(line); len(f) > 2 && slices.Contains(strings.Split(f[2], ","), "slave") {
			n++
		}
	}
	return n
}

// slotShare is the first and last slot of master i of n: the same shares
// as redis-cli's (0-5460, 5461-10922, 10923-16383 for three).
func slotShare(i, n int) (lo, hi int) {
	last := func(i int) int { return int(math.Round(float64((i+1)*16384)/float64(n))) - 1 }
	if i > 0 {
		lo = last(i-1) + 1
	}
	return lo, last(i)
}

// await asks missing every 50 ms, for at most setupWait, until it says
// nothing is missing.
func await(ctx context.Context, what string, missing func() string) error {
	deadline := time.Now().Add(setupWait)
	for {
		m := missing()
		if m == "" {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("launch: %s: %w (%s)", what, ctx.Err(), m)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("launch: %s within %v: %s", what, setupWait, m)
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Promoted reports whether s, a cluster node started as a replica, is a
// master now and says cluster_state:ok: the cluster has promoted it.
func (s *Redis) Promoted(ctx context.Context) bool {
	c := adminClient(s.Addr)
	defer c.Close()
	role, err := c.Do(ctx, "ROLE").Slice()
	return err == nil && len(role) > 0 && role[0] == "master" &&
		env.InfoField(c.ClusterInfo(ctx).Val(), "cluster_state") == "ok"
}

// adminClient is a client of one node for setting it up: short timeouts,
// no retries, and RESP2 with no CLIENT SETINFO, which any Redis with
// cluster mode understands.
func adminClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: time.Second,
		WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 1, DisableIdentity: true, Protocol: 2})
}
