package judge

// The faults: Redis restarted with and without its data, a Sentinel
// failover to a replica that never got the lease, a partition.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/wire"
)

// restartKeeps: on a Redis that writes every command to its append-only
// file, a lease outlives a restart (SIGKILL, then a start on the same
// files): the next holder must still find it held.
func restartKeeps(c *check) (string, string, string) {
	dir, err := os.MkdirTemp(c.r.dir, "restart-")
	if err != nil {
		return unknown, err.Error(), ""
	}
	args := append([]string{"--appendonly", "yes", "--appendfsync", "always"}, c.r.c.adapter.ServerArgs...)
	srv, err := c.r.procs.StartRedis(c.ctx, dir, args...)
	if err != nil {
		return unknown, "the judge could not start a Redis of its own: " + err.Error(), ""
	}
	defer srv.Proc().Kill(3 * time.Second)
	c.useRedis(srv.Addr)
	a, b := c.holder(), c.holder()
	ttl := 10 * time.Second
	ga := c.acquire(a, ttl, 5*time.Second, false)
	if !ga.OK {
		return fail, "holder A could not take a free lock: " + ga.Error, ""
	}
	down := now()
	if err := srv.Restart(c.ctx); err != nil {
		return unknown, "the judge could not restart its Redis: " + err.Error(), ""
	}
	up := now()
	c.tl.fault(down, up, "Redis killed and started again")
	if gb := c.acquire(b, ttl, time.Second, false); gb.OK {
		c.tl.bad(b.row())
		why := fmt.Sprintf("Redis was killed at %s and started again by %s, and it had forgotten holder A's lease (granted at %s, TTL %s): holder B got the lock at %s while A still held it",
			c.sec(down), c.sec(up), c.sec(ga.ret), dur(ttl), c.sec(gb.ret))
		if len(c.r.c.adapter.ServerArgs) > 0 {
			why += "; this Redis ran with " + strings.Join(c.r.c.adapter.ServerArgs, " ")
		}
		return fail, why, fixRestart
	}
	c.release(a, ga, request{})
	return pass, fmt.Sprintf("Redis restarted at %s with holder A's lease in its append-only file; holder B found it held", c.sec(down)), ""
}

// forgetting is a way for Redis to forget a lease under its holder:
// setup starts the servers and returns the address holders talk to;
// forget makes Redis forget, and says what it did.
type forgetting struct {
	what   string // for the sentences: "a restart"
	setup  func(c *check) (addr string, err error)
	forget func(c *check) (did string, err error)
}

// restart: a redis-server without persistence, killed and started again
// empty.
var restart = forgetting{what: "a restart",
	setup: func(c *check) (string, error) {
		srv, err := c.r.procs.StartRedis(c.ctx, c.r.dir)
		if err != nil {
			return "", err
		}
		c.servers = append(c.servers, srv)
		return srv.Addr, nil
	},
	forget: func(c *check) (string, error) {
		return "Redis was killed and started again empty", c.servers[0].Restart(c.ctx)
	}}

// failover: a primary, a replica whose replication link runs through a
// proxy of the judge's (cut before the lease is taken, so the replica
// never gets it), and three Sentinels; the primary is killed, the
// Sentinels promote the replica, and every holder's proxy turns to it,
// as a client that follows Sentinel would.
var failover = forgetting{what: "a failover",
	setup: func(c *check) (string, error) {
		primary, err := c.r.procs.StartRedis(c.ctx, c.r.dir)
		if err != nil {
			return "", err
		}
		link, err := wire.ListenRaw("127.0.0.1:0", primary.Addr)
		if err != nil {
			return "", err
		}
		c.atEnd = append(c.atEnd, func() { link.Close() })
		replica, err := c.r.procs.StartReplica(c.ctx, c.r.dir, link.Addr())
		if err != nil {
			return "", err
		}
		c.servers = append(c.servers, primary, replica)
		c.link = link
		for range 3 {
			s, err := c.r.procs.StartSentinel(c.ctx, c.r.dir, "judge", primary.Addr, 500*time.Millisecond)
			if err != nil {
				return "", err
			}
			c.servers = append(c.servers, s)
			c.sentinels = append(c.sentinels, s.Addr)
		}
		if err := c.poll(10*time.Second, func() bool { return replicaInSync(c.ctx, replica.Addr) }); err != nil {
			return "", fmt.Errorf("the replica never caught up with the primary: %w", err)
		}
		if err := c.sentinelsReady(c.sentinels, 1); err != nil {
			return "", err
		}
		c.link.Cut() // from here the replica gets nothing: not the lease, not the fence
		return primary.Addr, nil
	},
	forget: func(c *check) (string, error) {
		primary, replica := c.servers[0], c.servers[1]
		primary.Proc().Kill(3 * time.Second)
		killed := now()
		err := c.poll(30*time.Second, func() bool {
			for _, s := range c.sentinels {
				if primaryOf(c.ctx, s) == replica.Addr {
					return true
				}
			}
			return false
		})
		if err != nil {
			return "", fmt.Errorf("the Sentinels did not promote the replica: %w", err)
		}
		for _, p := range c.procs {
			p.wire.SetUpstream(replica.Addr)
			p.wire.Drop()
		}
		c.useRedis(replica.Addr)
		return fmt.Sprintf("the primary was killed and the Sentinels promoted the replica in %s", dur(time.Duration(now()-killed))), nil
	}}

// replicaInSync reports whether the replica at addr is linked to its
// primary and has loaded its copy.
func replicaInSync(ctx context.Context, addr string) bool {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	info, err := c.Info(ctx, "replication").Result()
	return err == nil && strings.Contains(info, "master_link_status:up")
}

// primaryOf is the primary a Sentinel names, host:port; "" when it
// does not answer.
func primaryOf(ctx context.Context, sentinel string) string {
	c := redis.NewClient(&redis.Options{Addr: sentinel, MaxRetries: -1})
	defer c.Close()
	got, err := c.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "judge").StringSlice()
	if err != nil || len(got) != 2 {
		return ""
	}
	return got[0] + ":" + got[1]
}

// sentinelsReady waits until every Sentinel has found the others and
// the replicas: before that, a failover may not come.
func (c *check) sentinelsReady(sentinels []string, replicas int) error {
	for _, a := range sentinels {
		sc := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		err := c.poll(20*time.Second, func() bool {
			peers, _ := sc.Do(c.ctx, "SENTINEL", "SENTINELS", "judge").Slice()
			reps, _ := sc.Do(c.ctx, "SENTINEL", "REPLICAS", "judge").Slice()
			return len(peers) == len(sentinels)-1 && len(reps) == replicas
		})
		sc.Close()
		if err != nil {
			return fmt.Errorf("the Sentinels did not find each other and the replicas: %w", err)
		}
	}
	return nil
}

// poll polls ok every 20 ms until it holds, at most d.
func (c *check) poll(d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("not within %s", dur(d))
		}
		c.sleep(20 * time.Millisecond)
	}
	return nil
}

// forgotten: holder A holds the lock and has read the wallet; Redis
// forgets the lease (f); holder B takes the lock, spends and writes; A
// writes. With a fence, PostgreSQL must keep the money right.
func forgotten(f forgetting) func(c *check) (string, string, string) {
	return func(c *check) (string, string, string) {
		fenced := c.r.can["fence"]
		set := now()
		id, err := c.r.wallet(c.ctx, 100)
		if err != nil {
			return unknown, "PostgreSQL: " + err.Error(), ""
		}
		addr, err := f.setup(c)
		defer func() {
			for _, s := range c.servers {
				s.Proc().Kill(3 * time.Second)
			}
		}()
		if err != nil {
			return unknown, "the judge could not set up " + f.what + ": " + err.Error(), ""
		}
		c.useRedis(addr)
		a, b := c.holder(), c.holder()
		ttl := 5 * time.Second
		ga := c.acquire(a, ttl, 5*time.Second, fenced)
		if !ga.OK {
			return fail, "holder A could not take a free lock: " + ga.Error, ""
		}
		ra := c.read(id, ga.Fence)
		if ra.err != nil {
			return unknown, "PostgreSQL: holder A could not read the wallet: " + ra.err.Error(), ""
		}
		c.tl.mark(ra.ret, a.row(), fmt.Sprintf("read %d", ra.balance), false)
		down := now()
		did, err := f.forget(c)
		if err != nil {
			return unknown, "the judge could not cause " + f.what + ": " + err.Error(), ""
		}
		forgot := now()
		c.tl.fault(down, forgot, did)
		c.tl.close(a.row(), down, "forgotten by Redis")
		gb := c.acquire(b, ttl, ttl, fenced)
		if !gb.OK {
			return pass, fmt.Sprintf("after %s (%s), holder B could not take the lock (%s)", f.what, did, gb.Error), ""
		}
		rb := c.read(id, gb.Fence)
		var wb dbOp
		story := fmt.Sprintf("holder A took the lock at %s (TTL %s) and read %d; then %s, by %s; holder B got the lock at %s", c.sec(ga.ret), dur(ttl), ra.balance, did, c.sec(forgot), c.sec(gb.ret))
		if rb.err == nil {
			wb = c.write(id, gb.Fence, rb.balance-10)
			c.tl.mark(wb.ret, b.row(), fmt.Sprintf("wrote %d", rb.balance-10), false)
			story += fmt.Sprintf(", read %d and wrote %d", rb.balance, rb.balance-10)
		} else {
			c.tl.mark(rb.ret, b.row(), "claim refused", false)
			story += fmt.Sprintf(", and PostgreSQL refused its claim (fence %d, not above A's %d: the fence counter was forgotten with the lease)", gb.Fence, ga.Fence)
		}
		c.release(b, gb, request{})
		wa := c.write(id, ga.Fence, ra.balance-10)
		lost := rb.err == nil && wa.err == nil
		label := "write refused"
		if lost {
			label = fmt.Sprintf("wrote %d over B's %d: one spend lost", ra.balance-10, rb.balance-10)
		} else if wa.err == nil {
			label = fmt.Sprintf("wrote %d", ra.balance-10)
		}
		c.tl.mark(wa.ret, a.row(), label, lost)
		readBack := now()
		bal, err := c.r.balance(c.ctx, id)
		if err != nil {
			return unknown, "PostgreSQL: " + err.Error(), ""
		}
		lin := c.linearizable(set, readBack, 100, bal, spendOp(1, ra, wa), spendOp(2, rb, wb))
		switch {
		case !(lost && bal == 90):
			return pass, fmt.Sprintf("%s; the balance is %d, right for the spends accepted%s", story, bal, lin), ""
		case fenced:
			return fail, fmt.Sprintf("%s; A then wrote %d too: two spends of 10 accepted, balance %d%s", story, ra.balance-10, bal, lin), fixStaleWrite
		}
		return broken, fmt.Sprintf("Redis forgets the lease in %s, and nothing else stops the old holder: %s; A then wrote %d over it: two spends of 10 accepted, balance %d%s", f.what, story, ra.balance-10, bal, lin), fixForgotten
	}
}
