package env_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
)

func TestRedisOptions_cluster(t *testing.T) {
	tests := []struct {
		name  string
		url   string
		addr  string
		want  []string
		wantU string
	}{
		{name: "REDIS_ADDR with commas", addr: "127.0.0.1:7001, 127.0.0.1:7002,127.0.0.1:7003",
			want: []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}},
		{name: "REDIS_URL with addr parameters", url: "redis://app:s3cret@127.0.0.1:7001?addr=127.0.0.1:7002&addr=127.0.0.1:7003",
			want: []string{"127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"}, wantU: "app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			opt, err := env.RedisOptions()
			if err != nil {
				t.Fatalf("RedisOptions: %v", err)
			}
			if fmt.Sprint(opt.Addrs) != fmt.Sprint(tt.want) || opt.Username != tt.wantU || !env.IsCluster(opt) {
				t.Errorf("got addrs %q user %q cluster %v; want %q %q true", opt.Addrs, opt.Username, env.IsCluster(opt), tt.want, tt.wantU)
			}
			if _, ok := redis.NewUniversalClient(opt).(*redis.ClusterClient); !ok {
				t.Error("NewUniversalClient did not make a cluster client")
			}
			if !opt.ContextTimeoutEnabled || opt.DialTimeout <= 0 || opt.DialTimeout > env.ConnectTimeout {
				t.Errorf("ContextTimeoutEnabled %v, DialTimeout %v: connects are not bounded", opt.ContextTimeoutEnabled, opt.DialTimeout)
			}
		})
	}
}

// Every way a cluster can be unusable at connect time gives one line,
// soon, naming the fix, and never the password.
func TestConnect_clusterRefusals(t *testing.T) {
	plain := labtest.StartRedis(t)
	// A node with cluster support on and no slots: cluster_state:fail.
	lonely := labtest.StartRedis(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf")
	tests := []struct {
		name string
		addr string
		url  string
		want []string
	}{
		{name: "no node answers", addr: "127.0.0.1:1,127.0.0.1:2", want: []string{"not reachable", "make cluster-up"}},
		{name: "servers without cluster support", addr: plain.Addr + "," + plain.Addr, want: []string{"not a cluster", "one address"}},
		{name: "a cluster that is not ok", addr: lonely.Addr + "," + lonely.Addr, want: []string{"is not ok", "cluster_state:fail", "make cluster-up"}},
		{name: "a cluster URL, unreachable", url: "redis://:hunter2@127.0.0.1:1?addr=127.0.0.1:2", want: []string{"not reachable", "make cluster-up"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", tt.url)
			t.Setenv("REDIS_ADDR", tt.addr)
			start := time.Now()
			rdb, err := env.Connect(context.Background())
			if err == nil {
				rdb.Close()
				t.Fatal("connected")
			}
			if took := time.Since(start); took > 2*env.ConnectTimeout {
				t.Errorf("Connect took %v to fail", took)
			}
			assertOneLine(t, err.Error(), tt.want, "hunter2")
		})
	}
}

// The configured Redis, when it is a cluster: keys in several slots are
// deleted, and INFO commandstats counts every master.
func TestCluster_keysAcrossSlots(t *testing.T) {
	rdb := testenv.Redis(t)
	if _, ok := rdb.(*redis.ClusterClient); !ok {
		t.Skip("REDIS_ADDR names one server; `make test-cluster` runs this on a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	prefix := labtest.Prefix(t, rdb)
	var keys []string
	for i := range 20 { // 20 keys without a hash tag: every master gets some
		k := fmt.Sprintf("%skey:%d", prefix, i)
		keys = append(keys, k)
		if err := rdb.Set(ctx, k, i, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := rdb.Del(ctx, keys...).Err(); err == nil || !strings.HasPrefix(err.Error(), "CROSSSLOT") {
		t.Fatalf("one DEL of 20 keys: %v, want CROSSSLOT (else this test proves nothing)", err)
	}
	before, err := env.ReadCommandStats(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	// A DEL each, in one pipeline that go-redis splits by node.
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, k := range keys {
			p.Del(ctx, k)
		}
		return nil
	}); err != nil {
		t.Fatalf("DEL key by key: %v", err)
	}
	after, err := env.ReadCommandStats(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	// Other tests may share the cluster: at least our 20.
	if n := after["del"] - before["del"]; n < 20 {
		t.Errorf("DEL calls summed over the masters went up by %d, want at least 20", n)
	}
	for _, k := range keys {
		if n := rdb.Exists(ctx, k).Val(); n != 0 {
			t.Errorf("%s is still there", k)
		}
	}
}

func TestClusterOptions_followAFailoverAndNeverRetryBlind(t *testing.T) {
	for _, retries := range []int{1, -1} {
		opt := &redis.UniversalOptions{Addrs: []string{"127.0.0.1:7001", "127.0.0.1:7002"}, MaxRetries: retries}
		c := env.ClusterOptions(opt)
		if c.ClusterStateReloadInterval <= 0 || c.ClusterStateReloadInterval > env.ClusterReloadInterval {
			t.Errorf("MaxRetries %d: ClusterStateReloadInterval %v, want at most %v", retries, c.ClusterStateReloadInterval, env.ClusterReloadInterval)
		}
		if noRetry := c.MaxRedirects == -1; noRetry != (retries < 0) {
			t.Errorf("MaxRetries %d: MaxRedirects %d", retries, c.MaxRedirects)
		}
	}
}

// The reproduction: a client from Connect, kill -9 the master of
// its key. It must write again soon after the replica is promoted (with
// go-redis's defaults it still wrote to the dead master 40 s later).
func TestConnect_followsAClusterFailover(t *testing.T) {
	cl := labtest.StartCluster(t)
	key := labtest.Prefix(t, cl.Use(t)) + "key"
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	rdb, err := env.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	if err := rdb.Set(ctx, key, 1, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	m, err := rdb.(*redis.ClusterClient).MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	victim := slices.IndexFunc(cl.Masters[:], func(s *labtest.RedisServer) bool { return s.Addr == m.Options().Addr })
	cl.Masters[victim].Kill()
	killed := time.Now()
	var promoted time.Time
	for {
		if promoted.IsZero() && cl.Promoted(ctx, victim) {
			promoted = time.Now()
		}
		err := rdb.Set(ctx, key, 2, time.Minute).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no SET got through in %v after the kill: %v", time.Since(killed).Round(time.Second), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The promotion may land between the last look and the SET that got
	// through: look once more before calling the kill ineffective.
	if promoted.IsZero() && cl.Promoted(ctx, victim) {
		promoted = time.Now()
	}
	if promoted.IsZero() {
		t.Fatal("a SET got through before the replica was promoted: the kill did not take")
	}
	// Generous: the slot map is re-read within ClusterReloadInterval.
	if late := time.Since(promoted); late > 5*time.Second {
		t.Errorf("the first SET after the promotion got through %v later, want within a few seconds", late.Round(100*time.Millisecond))
	}
	t.Logf("promoted %v after the kill, written again %v after that",
		promoted.Sub(killed).Round(100*time.Millisecond), time.Since(promoted).Round(100*time.Millisecond))
}
