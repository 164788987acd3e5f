package judge

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// restartKeeps: on a Redis that writes every command to its append-only
// file, a lease outlives a restart (SIGKILL, then a start on the same
// files): the next holder must still find it held.
func restartKeeps(c *check) (Outcome, string) {
	dir, err := os.MkdirTemp(c.r.dir, "restart-")
	if err != nil {
		return Unknown, err.Error()
	}
	args := append([]string{"--appendonly", "yes", "--appendfsync", "always"}, c.r.adapter.ServerArgs...)
	srv, err := c.r.procs.StartRedis(c.ctx, dir, args...)
	if err != nil {
		return Unknown, "the judge could not start a Redis of its own: " + err.Error()
	}
	defer srv.Proc().Kill(3 * time.Second)
	c.useRedis(srv)
	p, q := c.holder(), c.holder()
	ttl := 10 * time.Second
	a := c.acquire(p, "A", ttl, 5*time.Second)
	if !a.OK {
		return Fail, "holder A could not take a free lock: " + a.Err
	}
	down := now()
	if err := srv.Restart(c.ctx); err != nil {
		return Unknown, "the judge could not restart its Redis: " + err.Error()
	}
	up := now()
	c.tl.fault(down, up, "Redis killed and started again")
	b := c.acquire(q, "B", ttl, time.Second)
	if b.OK {
		c.tl.bad(who("B", q))
		why := fmt.Sprintf("Redis was killed at %s and started again by %s, and it had forgotten holder A's lease (granted at %s, TTL %s): holder B got the lock at %s while A still held it",
			c.sec(down), c.sec(up), c.sec(a.Ret), dur(ttl), c.sec(b.Ret))
		if len(c.r.adapter.ServerArgs) > 0 {
			why += "; this Redis ran with " + strings.Join(c.r.adapter.ServerArgs, " ")
		}
		return Fail, why
	}
	c.release(p, "A", order{})
	return Pass, fmt.Sprintf("Redis restarted at %s with holder A's lease in its append-only file; holder B found it held", c.sec(down))
}
