package launch

import (
	"context"
	"strconv"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/env"
)

// The slots are shared out as redis-cli shares them, every slot once.
func TestSlotShare_coversEverySlotOnce(t *testing.T) {
	want := [][2]int{{0, 5460}, {5461, 10922}, {10923, 16383}}
	for i, w := range want {
		if lo, hi := slotShare(i, 3); lo != w[0] || hi != w[1] {
			t.Errorf("slotShare(%d, 3) = %d-%d, want %d-%d", i, lo, hi, w[0], w[1])
		}
	}
	for n := 1; n <= 7; n++ {
		next := 0
		for i := range n {
			lo, hi := slotShare(i, n)
			if lo != next || hi < lo {
				t.Fatalf("slotShare(%d, %d) = %d-%d, want it to start at %d", i, n, lo, hi, next)
			}
			next = hi + 1
		}
		if next != 16384 {
			t.Errorf("%d masters: the shares end at %d, want 16383", n, next-1)
		}
	}
}

// startCluster starts a cluster of the test's own, killed when it ends.
func startCluster(t *testing.T, ctx context.Context, spec ClusterSpec) *Cluster {
	t.Helper()
	if _, err := RedisBinary(); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir() // before KillAll's clean-up, which must run first
	g := new(Group)
	t.Cleanup(func() { g.KillAll(5 * time.Second) })
	cl, err := g.StartCluster(ctx, dir, spec)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// A master with two replicas is ready when StartCluster returns: every
// node knows the other two and says cluster_state:ok, the master announces
// the port Announce gave it, and each replica is in sync.
func TestCluster_readyWithTwoReplicasAndAnnouncedPort(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	announced := -1
	cl := startCluster(t, ctx, ClusterSpec{Masters: 1, Replicas: 2, NodeTimeout: time.Second,
		Announce: func(i int, m *Redis) (int, error) { announced = m.Port; return m.Port, nil }})
	if len(cl.Masters) != 1 || len(cl.Replicas) != 1 || len(cl.Replicas[0]) != 2 {
		t.Fatalf("got %d masters and replicas %v, want 1 master with 2 replicas", len(cl.Masters), cl.Replicas)
	}
	for _, s := range append(cl.Masters, cl.Replicas[0]...) {
		c := adminClient(s.Addr)
		info := c.ClusterInfo(ctx).Val()
		repl := c.Info(ctx, "replication").Val()
		port := c.ConfigGet(ctx, "cluster-announce-port").Val()["cluster-announce-port"]
		c.Close()
		if env.InfoField(info, "cluster_state") != "ok" || env.InfoField(info, "cluster_known_nodes") != "3" {
			t.Errorf("%s: cluster_state:%s, cluster_known_nodes:%s; want ok and 3", s.Addr,
				env.InfoField(info, "cluster_state"), env.InfoField(info, "cluster_known_nodes"))
		}
		if s == cl.Masters[0] {
			if port != strconv.Itoa(announced) || env.InfoField(repl, "connected_slaves") != "2" {
				t.Errorf("master %s announces port %q and has %s replicas, want %d and 2", s.Addr, port, env.InfoField(repl, "connected_slaves"), announced)
			}
		} else if env.InfoField(repl, "master_link_status") != "up" || s.Promoted(ctx) {
			t.Errorf("replica %s: master_link_status:%s, promoted %v; want up and not promoted", s.Addr, env.InfoField(repl, "master_link_status"), s.Promoted(ctx))
		}
	}
}

// When a master of three dies, its replica is promoted.
func TestCluster_promotesTheReplicaOfAKilledMaster(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl := startCluster(t, ctx, ClusterSpec{Masters: 3, Replicas: 1, NodeTimeout: time.Second})
	if cl.Replicas[1][0].Promoted(ctx) {
		t.Fatal("a replica is a master before any failover")
	}
	cl.Masters[1].Proc().Kill(3 * time.Second)
	for !cl.Replicas[1][0].Promoted(ctx) {
		if ctx.Err() != nil {
			t.Fatal("the replica of the killed master was not promoted within 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// CreateCluster refuses nodes that do not make whole masters.
func TestCreateCluster_refusesAnUnevenCount(t *testing.T) {
	for _, n := range []int{0, 5} {
		if err := CreateCluster(t.Context(), make([]string, n), 1); err == nil {
			t.Errorf("CreateCluster of %d nodes with 1 replica each: no error", n)
		}
	}
}
