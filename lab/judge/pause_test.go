package judge

import (
	mrand "math/rand/v2"
	"os"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/wire"
)

// A lost reply closes the holder's connection, so its Release answers at
// once, maybe before the judge looks at the proxy: strike must say the
// fault struck all the same, every time, or the lost-reply check finds
// nothing to judge. On a busy machine (a CPU hog beside it) this failed
// in a few of its 30 tries before strike looked at Struck again.
func TestStrike_lostReplyAnsweredAtOnce(t *testing.T) {
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	r := &runner{c: config{adapter: root.Adapter(), exe: os.Args[0]}, procs: new(launch.Group), rng: mrand.New(mrand.NewPCG(1, 2))}
	t.Cleanup(func() { r.procs.KillAll(5 * time.Second) })
	var err error
	if r.redis, err = r.procs.StartRedis(t.Context(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	c := r.newCheck(ctx, property{id: "strike"})
	defer c.end()
	p := c.holder()
	for i := range 30 {
		c.newKey()
		g := c.acquire(p, 10*time.Second, 2*time.Second, false)
		if !g.OK {
			t.Fatalf("try %d: Acquire: %s", i, g.Error)
		}
		pd, at, struck, early := c.strike(p, point{wire.LoseReply, 1}, request{Op: "release", Lease: g.Lease})
		if !struck {
			t.Fatalf("try %d: strike said the release answered (%+v) before the lost reply struck", i, early)
		}
		if rel := c.wait(pd); rel.OK || rel.NotHeld || at.Name != "EVALSHA" && at.Name != "EVAL" {
			t.Fatalf("try %d: struck at %s, Release answered %+v; want its script struck and an error", i, at, rel)
		}
	}
}
