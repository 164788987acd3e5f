package judge

import (
	"errors"
	"fmt"
	"net"
	"os/exec"
	"time"

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
			srv, err := n.StartRedis(c.ctx, c.r.procs, c.r.dir, i, 6379, args...)
			if err != nil {
				return "", err
			}
			c.atEnd = append(c.atEnd, func() { srv.Proc.Kill(3 * time.Second) })
			c.hosts = append(c.hosts, srv.Ctl)
		}
		for _, s := range c.hosts[1:] {
			if err := c.poll(10*time.Second, func() bool { return replicaInSync(c.ctx, s) }); err != nil {
				return "", fmt.Errorf("the replica at %s never caught up with the primary: %w", s, err)
			}
		}
		var sentinels []string
		for i := range netns.Hosts {
			srv, err := n.StartSentinel(c.ctx, c.r.procs, c.r.dir, i, 26379, "judge", 6379, time.Second)
			if err != nil {
				return "", err
			}
			c.atEnd = append(c.atEnd, func() { srv.Proc.Kill(3 * time.Second) })
			sentinels = append(sentinels, srv.Ctl)
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
