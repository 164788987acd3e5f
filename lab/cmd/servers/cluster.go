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
// (installing redis-server first, as up does) and joins them
// (launch.CreateCluster). Data lives in .services/cluster-PORT/ and is
// thrown away: each cluster-up of a stopped cluster starts an empty one.
// cluster-down stops only the processes cluster-up started here.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
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

// nodeDir is the folder of the node on port.
func (c *cluster) nodeDir(port int) string {
	return filepath.Join(c.dir, strconv.Itoa(port))
}

// nodeRecord is the record of the node on port that cluster-up started
// here, or nil. An older version kept none: its nodes are those the
// started file lists, in their folders.
func (m *machine) nodeRecord(c *cluster, port int) (*record, error) {
	r, err := m.readRecord(filepath.Join(c.nodeDir(port), "started"), "redis-server", c.nodeDir(port))
	if r != nil || err != nil {
		return r, err
	}
	if slices.Contains(strings.Fields(c.how()), strconv.Itoa(port)) {
		return &record{Daemon: launch.Daemon{Kind: "redis-server", Port: port, Dir: c.nodeDir(port)},
			Checkout: m.home(), file: filepath.Join(c.nodeDir(port), "started")}, nil
	}
	return nil, nil
}

func (c *cluster) how() string {
	raw, _ := os.ReadFile(c.started)
	return strings.TrimSpace(string(raw))
}

// node asks the node on port a question, for 3 s at most.
func node(ctx context.Context, port int, args ...any) (any, error) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(port), MaxRetries: -1, PoolSize: 1,
		DialTimeout: 3 * time.Second, ReadTimeout: 3 * time.Second, DisableIdentity: true, Protocol: 2})
	defer rdb.Close()
	return rdb.Do(ctx, args...).Result()
}

// clusterState is the node's cluster_state (ok, fail), or "down" with
// what answers on the port instead: nothing, something that is not
// Redis, or a Redis that says why it gives none.
func clusterState(ctx context.Context, port int) (state, why string) {
	if !reachable("127.0.0.1", strconv.Itoa(port)) {
		return "down", "nothing answers"
	}
	if !launch.Answers("127.0.0.1:" + strconv.Itoa(port)) {
		return "down", "something that is not Redis holds the port"
	}
	info, err := node(ctx, port, "CLUSTER", "INFO")
	if err != nil {
		return "down", "a Redis that is not a cluster node answers: " + err.Error()
	}
	s, _ := info.(string)
	if v := env.InfoField(s, "cluster_state"); v != "" {
		return v, ""
	}
	return "down", "a Redis whose CLUSTER INFO names no cluster_state answers"
}

func (c *cluster) allOK(ctx context.Context) bool {
	for _, p := range c.ports {
		if s, _ := clusterState(ctx, p); s != "ok" {
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
		if r, _ := m.nodeRecord(c, p); r != nil && m.running(r) {
			continue
		}
		if reachable("127.0.0.1", strconv.Itoa(p)) || reachable("127.0.0.1", strconv.Itoa(p+10000)) {
			return fmt.Errorf("port %d (or its bus port %d) is taken by something this program did not start: stop it, or pick other ports with CLUSTER_PORT=8001 make cluster-up", p, p+10000)
		}
	}
	// Leftovers of a half-started cluster go first.
	if how := c.how(); how != "" && how != "compose" {
		if err := m.clusterStop(c); err != nil {
			return err
		}
	}
	if c.ports[0] == 7001 && m.dockerWorks(ctx) {
		m.say("starting the cluster with docker compose (profile cluster, redis:8.10.2)")
		if err := m.compose(ctx, "--profile", "cluster", "up", "-d", "--wait", "redis-cluster"); err != nil {
			return errors.New("docker compose could not start the cluster; see: docker compose --profile cluster logs redis-cluster")
		}
		if err := os.WriteFile(c.started, []byte("compose\n"), 0o644); err != nil {
			return fmt.Errorf("cannot write %s: %w; make .services writable, and stop the cluster with docker compose --profile cluster down", c.started, err)
		}
		if !c.waitOK(ctx, 30*time.Second) {
			return errors.New("the cluster in docker did not reach cluster_state:ok within 30 s; see: docker compose --profile cluster logs redis-cluster")
		}
		m.ready(c, "docker compose")
		return nil
	}
	if err := m.redisServer(ctx, "redis-server is not installed, and the cluster needs it"); err != nil {
		return err
	}
	os.RemoveAll(c.dir) // nodes.conf of an earlier cluster would make them rejoin it
	fail := func(err error) error {
		if stopErr := m.clusterStop(c); stopErr != nil {
			return errors.Join(err, stopErr)
		}
		return err
	}
	var ports []string
	for _, p := range c.ports {
		ports = append(ports, strconv.Itoa(p))
		if err := os.WriteFile(c.started, []byte(strings.Join(ports, "\n")+"\n"), 0o644); err != nil {
			return fail(fmt.Errorf("cannot write %s: %w; make .services writable", c.started, err))
		}
		// Failover after 3 s without a master, not the default 15 s: a
		// teaching cluster on one machine, where a silent node is a
		// stopped one. A replica gets its first copy at once, not 5 s
		// later: cluster-up waits for it.
		if _, err := m.startRedis(ctx, c.nodeDir(p), "127.0.0.1", p,
			"cluster-enabled yes", "cluster-config-file nodes.conf", "cluster-node-timeout 3000", "repl-diskless-sync-delay 0"); err != nil {
			return fail(err)
		}
	}
	if err := launch.CreateCluster(ctx, c.addrs(6), 1); err != nil {
		return fail(fmt.Errorf("%w; see %s/*/redis.log", err, c.dir))
	}
	m.ready(c, "redis-server "+launch.RedisVersion())
	return nil
}

// clusterStop stops the redis-server processes of c that this checkout
// started, and forgets the cluster once none is left.
func (m *machine) clusterStop(c *cluster) error {
	stopped := 0
	var errs []error
	for _, p := range c.ports {
		r, err := m.nodeRecord(c, p)
		if err != nil || r == nil {
			errs = append(errs, err)
			continue
		}
		if !m.ours(r) {
			m.say("127.0.0.1:%d: started by the checkout at %s, not this copy of it: left running", p, filepath.Dir(r.Checkout))
		} else if err := r.Stop(); err == nil {
			stopped++
		} else if !errors.Is(err, launch.ErrNotOurs) {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, r.remove())
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if stopped > 0 {
		m.say("stopped %d redis-server processes of the cluster", stopped)
	}
	return removeState(c.started)
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
		if err := m.compose(ctx, "--profile", "cluster", "down"); err != nil {
			return fmt.Errorf("docker compose --profile cluster down failed (%w)", err)
		}
		m.say("stopped the cluster in docker compose")
		return removeState(c.started)
	default:
		return m.clusterStop(c)
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
		s, why := clusterState(ctx, p)
		if s == "down" {
			m.say("127.0.0.1:%d: %s", p, why)
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
