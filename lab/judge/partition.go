package judge

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/netns"
)

// partition: three hosts, each a network namespace of the judge's own
// (lab/internal/netns), with a redis-server and a Sentinel in each: the
// primary in host 0, its replicas in hosts 1 and 2. The partition takes
// host 0's link to the others down; its primary keeps running, and
// holder A with it: A's proxy still reaches it. The cut comes before A
// takes its lease, so that the majority never hears of it. The Sentinels of hosts 1
// and 2 promote one of their replicas, and every holder started after A
// talks to that one, as a client on the majority's side would.
var partition = forgetting{what: "a partition",
	setup: func(c *check) (string, error) {
		if err := netns.CanPartition(); err != nil {
			return "", err
		}
		n, left, err := netns.MakeNet("judge", "127.0.0.1:1") // the judge reaches PostgreSQL itself
		if err != nil {
			return "", err
		}
		if left != "" {
			c.tl.fault(now(), now(), left)
		}
		c.atEnd = append(c.atEnd, func() { n.Remove() })
		c.net = n
		for i := range netns.Hosts {
			var args []string
			if i > 0 {
				args = []string{"--replicaof", n.LAN(0), "6379"}
			}
			if err := c.startInHost(i, 6379, args...); err != nil {
				return "", err
			}
		}
		for _, s := range c.hosts[1:] {
			if err := c.poll(10*time.Second, func() bool { return replicaInSync(c.ctx, s) }); err != nil {
				return "", fmt.Errorf("the replica at %s never caught up with the primary: %w", s, err)
			}
		}
		var sentinels []string
		for i := range netns.Hosts {
			conf := filepath.Join(c.r.dir, fmt.Sprintf("sentinel-h%d-%d.conf", i, now()))
			text := fmt.Sprintf("port 26379\nbind %s %s\nprotected-mode no\nsentinel monitor judge %s 6379 2\n"+
				"sentinel down-after-milliseconds judge 1000\nsentinel failover-timeout judge 60000\n", n.LAN(i), n.Uplink(i), n.LAN(0))
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				return "", err
			}
			if err := c.startInHost(i, 26379, conf, "--sentinel"); err != nil {
				return "", err
			}
			sentinels = append(sentinels, c.hosts[len(c.hosts)-1])
		}
		c.sentinels = sentinels
		if err := c.sentinelsReady(sentinels, netns.Hosts-1); err != nil {
			return "", err
		}
		// Cut before holder A takes its lease: the majority never hears
		// of it, as when a partition strikes just before a grant.
		if err := n.Cut(0); err != nil {
			return "", err
		}
		c.cut = now()
		return c.hosts[0], nil
	},
	forget: func(c *check) (string, error) {
		promoted := ""
		err := c.poll(30*time.Second, func() bool {
			for i := 1; i < netns.Hosts; i++ {
				if primaryOf(c.ctx, c.sentinels[i]) == net.JoinHostPort(c.net.LAN(i), "6379") {
					promoted = c.hosts[i]
					return true
				}
			}
			return false
		})
		if err != nil {
			return "", fmt.Errorf("the majority's Sentinels did not promote a replica: %w", err)
		}
		for _, p := range c.procs[1:] { // holder A stays with the primary it can reach
			p.wire.SetUpstream(promoted)
			p.wire.Drop()
		}
		c.useRedis(promoted)
		return fmt.Sprintf("the Sentinels of the hosts cut off from the primary's since %s promoted a replica, while the primary still served A", c.sec(c.cut)), nil
	}}

// startInHost starts redis-server (or a Sentinel, on 26379) with args in
// host i, listening on both its addresses, and waits until it answers on
// the uplink; it keeps the uplink address in c.hosts.
func (c *check) startInHost(i, port int, args ...string) error {
	bin, err := launch.RedisBinary()
	if err != nil {
		return err
	}
	ctl := net.JoinHostPort(c.net.Uplink(i), fmt.Sprint(port))
	if port == 6379 {
		args = append([]string{"--port", "6379", "--bind", c.net.LAN(i), c.net.Uplink(i), "--protected-mode", "no",
			"--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"}, args...)
	}
	cmd := c.net.Command(i, bin, args...)
	cmd.Dir = c.r.dir
	var log launch.Log
	cmd.Stdout, cmd.Stderr = &log, &log
	p, err := c.r.procs.Start(fmt.Sprintf("redis-server %s (host %d)", ctl, i), cmd)
	if err != nil {
		return err
	}
	c.atEnd = append(c.atEnd, func() { p.Kill(3 * time.Second) })
	if err := c.poll(10*time.Second, func() bool { return !p.Running() || launch.Answers(ctl) }); err != nil || !p.Running() {
		return fmt.Errorf("redis-server in host %d did not start: %s", i, log.LastLine())
	}
	c.hosts = append(c.hosts, ctl)
	return nil
}

// partitioned judges the money through a partition, where this machine
// can make one.
func partitioned(c *check) (string, string, string) {
	if err := netns.CanPartition(); err != nil {
		why := err.Error()
		if errors.Is(err, netns.ErrNoNetns) {
			why = "not run: " + why
		}
		return unknown, why, ""
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return unknown, "not run: " + err.Error(), ""
	}
	return forgotten(partition)(c)
}
