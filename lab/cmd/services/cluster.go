package main

// A Redis Cluster of three masters, each with one replica, on six loopback
// ports (CLUSTER_PORT, default 7001, and the five after it), for running
// the steps on a cluster:
//
//	make cluster-up
//	REDIS_ADDR=127.0.0.1:7001,127.0.0.1:7002,127.0.0.1:7003 go run ./cmd/step2-lock
//
// cluster-up uses docker compose (the cluster profile of
// docker-compose.yml) when a Docker engine answers and the ports are the
// default ones; otherwise it starts six local redis-server processes
// (installing redis-server first, as up does), joins them as the drill
// and the tests join theirs (launch.CreateCluster: slots, meet, replicas),
// and waits until every node says cluster_state:ok. Data
// lives in .services/cluster-PORT/ and is thrown away: each cluster-up of a
// stopped cluster starts an empty one. cluster-down stops only the
// processes cluster-up started, by their pid files.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
)

// cluster is the six nodes CLUSTER_PORT names.
type cluster struct {
	ports   []int
	dir     string // .services/cluster-PORT: one folder per first port
	started string // .services/cluster-PORT.started: "compose", or the ports started
}

func (m *machine) cluster() (*cluster, error) {
	first := 7001
	if v := os.Getenv("CLUSTER_PORT"); v != "" {
		n, err := strconv.Atoi(v)
		// A node also listens on its port + 10000, for the cluster bus.
		if err != nil || n < 1024 || n+5+10000 > 65535 {
			return nil, fmt.Errorf("CLUSTER_PORT must be a port from 1024 to 55530 (each node also takes its port + 10000), not %q", v)
		}
		first = n
	}
	c := &cluster{dir: m.state(fmt.Sprintf("cluster-%d", first)), started: m.state(fmt.Sprintf("cluster-%d.started", first))}
	for p := first; p < first+6; p++ {
		c.ports = append(c.ports, p)
	}
	return c, nil
}

func (c *cluster) addrs(n int) []string {
	var out []string
	for _, p := range c.ports[:n] {
		out = append(out, "127.0.0.1:"+strconv.Itoa(p))
	}
	return out
}

func (c *cluster) pidFile(port int) string {
	return fmt.Sprintf("%s/%d/redis.pid", c.dir, port)
}

func (c *cluster) how() string {
	raw, _ := os.ReadFile(c.started)
	return strings.TrimSpace(string(raw))
}

// node asks the node on port a question and returns its answer, or an
// error when nothing answers within 3 s.
func node(ctx context.Context, port int, args ...any) (any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, PoolSize: 1,
		DialTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second, DisableIdentity: true, Protocol: 2})
	defer rdb.Close()
	return rdb.Do(ctx, args...).Result()
}

// clusterState is the node's cluster_state (ok, fail), or "down".
func clusterState(ctx context.Context, port int) string {
	info, err := node(ctx, port, "CLUSTER", "INFO")
	s, _ := info.(string)
	for line := range strings.SplitSeq(s, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), "cluster_state:"); found && err == nil {
			return v
		}
	}
	return "down"
}

func (c *cluster) allOK(ctx context.Context) bool {
	for _, p := range c.ports {
		if clusterState(ctx, p) != "ok" {
			return false
		}
	}
	return true
}

func (c *cluster) waitOK(ctx context.Context, d time.Duration) bool {
	for deadline := time.Now().Add(d); time.Now().Before(deadline) && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		if c.allOK(ctx) {
			return true
		}
	}
	return false
}

func (m *machine) ready(c *cluster, how string) {
	m.say("Redis Cluster (%s): 3 masters and 3 replicas on 127.0.0.1:%d-%d, cluster_state:ok on every node", how, c.ports[0], c.ports[5])
	m.say("use it with: export REDIS_ADDR=%s", strings.Join(c.addrs(3), ","))
}

func (m *machine) clusterUp(ctx context.Context) error {
	c, err := m.cluster()
	if err != nil {
		return err
	}
	if c.how() != "" && c.allOK(ctx) {
		m.ready(c, "already running")
		return nil
	}
	for _, p := range c.ports {
		if _, ours := launch.DaemonPid(c.pidFile(p), "redis-server"); ours {
			continue
		}
		if reachable("127.0.0.1", strconv.Itoa(p)) || reachable("127.0.0.1", strconv.Itoa(p+10000)) {
			return fmt.Errorf("port %d (or its bus port %d) is taken by something this program did not start: stop it, or pick other ports with CLUSTER_PORT=8001 make cluster-up", p, p+10000)
		}
	}
	// Leftovers of a half-started cluster go first.
	if how := c.how(); how != "" && how != "compose" {
		m.clusterStop(c)
	}
	if c.ports[0] == 7001 && m.dockerWorks(ctx) {
		m.say("starting the cluster with docker compose (profile cluster, redis:8.10.2)")
		if err := m.compose(ctx, "--profile", "cluster", "up", "-d", "--wait", "redis-cluster"); err != nil {
			return errors.New("docker compose could not start the cluster; see: docker compose --profile cluster logs redis-cluster")
		}
		os.WriteFile(c.started, []byte("compose\n"), 0o644)
		if !c.waitOK(ctx, 30*time.Second) {
			return errors.New("the cluster in docker did not reach cluster_state:ok within 30 s; see: docker compose --profile cluster logs redis-cluster")
		}
		m.ready(c, "docker compose")
		return nil
	}
	if m.goos == "windows" {
		return errors.New(windowsAdvice)
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		if err := m.install(ctx, "redis-server is not installed, and the cluster needs it", "redis-server", "redis"); err != nil {
			return err
		}
	}
	os.RemoveAll(c.dir) // nodes.conf of an earlier cluster would make them rejoin it
	fail := func(err error) error {
		m.clusterStop(c)
		return err
	}
	var ports []string
	for _, p := range c.ports {
		// Failover after 3 s without a master, not the default 15 s: a
		// teaching cluster on one machine, where a silent node is a
		// stopped one. A replica gets its first copy at once, not 5 s
		// later: cluster-up waits for it.
		err := launch.StartRedisDaemon(ctx, fmt.Sprintf("%s/%d", c.dir, p), "127.0.0.1", p,
			"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 3000", "repl-diskless-sync-delay 0")
		if err != nil {
			return fail(err)
		}
		ports = append(ports, strconv.Itoa(p))
		os.WriteFile(c.started, []byte(strings.Join(ports, "\n")+"\n"), 0o644)
	}
	if err := launch.CreateCluster(ctx, c.addrs(6), 1); err != nil {
		return fail(fmt.Errorf("%w; see %s/*/redis.log", err, c.dir))
	}
	m.ready(c, "redis-server "+launch.RedisVersion())
	return nil
}

// clusterStop stops the redis-server processes of c that we started.
func (m *machine) clusterStop(c *cluster) {
	stopped := 0
	for _, p := range c.ports {
		if launch.StopDaemon(c.pidFile(p), "redis-server") {
			stopped++
		}
	}
	os.Remove(c.started)
	if stopped > 0 {
		m.say("stopped %d redis-server processes of the cluster", stopped)
	}
}

func (m *machine) clusterDown(ctx context.Context) error {
	c, err := m.cluster()
	if err != nil {
		return err
	}
	switch c.how() {
	case "":
		m.say("no cluster started here; nothing to stop")
	case "compose":
		m.compose(ctx, "--profile", "cluster", "down")
		os.Remove(c.started)
		m.say("stopped the cluster in docker compose")
	default:
		m.clusterStop(c)
	}
	return nil
}

func (m *machine) clusterStatus(ctx context.Context) error {
	c, err := m.cluster()
	if err != nil {
		return err
	}
	failed := false
	for _, p := range c.ports {
		s := clusterState(ctx, p)
		if s == "down" {
			m.say("127.0.0.1:%d: nothing answers", p)
			failed = true
			continue
		}
		role := ""
		if r, err := node(ctx, p, "ROLE"); err == nil {
			if list, ok := r.([]any); ok && len(list) > 0 {
				role, _ = list[0].(string)
			}
		}
		m.say("127.0.0.1:%d: %s, cluster_state:%s", p, role, s)
		failed = failed || s != "ok"
	}
	switch c.how() {
	case "":
	case "compose":
		m.say("started here: docker compose")
	default:
		m.say("started here: redis-server processes")
	}
	if failed {
		return errSaid
	}
	return nil
}
