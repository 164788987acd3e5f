package judge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
)

// Config is one judging of one lock.
type Config struct {
	Adapter Adapter
	Steps   []int    // the chapters to judge (2, 3, 5; 4: the faults); nil: all
	Only    []string // the properties to judge, by id; nil: all the chapters have
	Seed    int64    // picks the schedule: the same seed, the same schedule
	// Exe and Args start a holder process: this program again (os.Args[0]
	// and, for a test binary, the flags that run the same test).
	Exe  string
	Args []string
	Dir  string // for the servers' files; a temporary folder when ""
	// Say, when not nil, gets each verdict as soon as it is known.
	Say func(Verdict)
}

// Report is what Run found.
type Report struct {
	Lock     string        `json:"lock"`
	Seed     int64         `json:"seed"`
	Claims   []string      `json:"claims"`
	Verdicts []Verdict     `json:"verdicts"`
	Took     time.Duration `json:"took_ns"`
}

// Failed reports whether a property failed.
func (r Report) Failed() bool {
	for _, v := range r.Verdicts {
		if v.Outcome == Fail {
			return true
		}
	}
	return false
}

// Count says how many verdicts had each outcome, on one line.
func (r Report) Count() string {
	n := map[Outcome]int{}
	for _, v := range r.Verdicts {
		n[v.Outcome]++
	}
	var parts []string
	for _, o := range []Outcome{Pass, Fail, Unknown, NotClaimed, Broken} {
		if n[o] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[o], o))
		}
	}
	return fmt.Sprintf("%d properties: %s", len(r.Verdicts), strings.Join(parts, ", "))
}

// runner is one Run.
type runner struct {
	c       Config
	adapter Adapter
	exe     string
	args    []string
	procs   *launch.Group
	dir     string
	owner   string // of the PostgreSQL rows, and in the key names
	rng     *mrand.Rand
	claims  map[string]bool
	redis   *launch.Redis // the judge's own Redis for the properties
	db      *db           // opened by the first check that needs PostgreSQL
}

// Run judges the lock c.Adapter makes, property by property, and returns
// the verdicts. It starts a redis-server of its own, and holder processes
// (c.Exe) that make the lock and call it; it kills every one of them and
// deletes the PostgreSQL rows it wrote before it returns, also when ctx
// ends first.
func Run(ctx context.Context, c Config) (rep Report, err error) {
	start := time.Now()
	rep = Report{Lock: c.Adapter.Name, Seed: c.Seed}
	r := &runner{c: c, adapter: c.Adapter, exe: c.Exe, args: c.Args, procs: new(launch.Group),
		rng: mrand.New(mrand.NewPCG(uint64(c.Seed), 0x6a75646765)), owner: "judge:" + strings.ToLower(rand.Text()[:10])}
	defer r.procs.KillAll(5 * time.Second)
	defer func() { rep.Took = time.Since(start) }()
	r.dir = c.Dir
	if r.dir == "" {
		d, err := os.MkdirTemp("", "judge-")
		if err != nil {
			return rep, fmt.Errorf("judge: %w", err)
		}
		defer os.RemoveAll(d)
		r.dir = d
	}
	if r.redis, err = r.procs.StartRedis(ctx, r.dir); err != nil {
		return rep, fmt.Errorf("judge: start a redis-server of its own: %w", err)
	}
	defer r.clearRows()
	if rep.Claims, err = r.probe(ctx); err != nil {
		return rep, err
	}
	r.claims = map[string]bool{}
	for _, cl := range rep.Claims {
		r.claims[cl] = true
	}
	for _, p := range properties {
		if !r.wants(p) {
			continue
		}
		if ctx.Err() != nil {
			return rep, ctx.Err()
		}
		v := r.judge(ctx, p)
		rep.Verdicts = append(rep.Verdicts, v)
		if c.Say != nil {
			c.Say(v)
		}
	}
	return rep, ctx.Err()
}

// wants says whether the run judges p: the failover and the partition,
// which take a minute or more, and the guards of production, only when
// asked for by name or chapter (-step faults, -step guards).
func (r *runner) wants(p property) bool {
	if len(r.c.Only) > 0 {
		return slices.Contains(r.c.Only, p.id)
	}
	if p.slow || p.step == 6 { // the guards: the article's lock does not aim for them
		return slices.Contains(r.c.Steps, p.step)
	}
	return len(r.c.Steps) == 0 || slices.Contains(r.c.Steps, p.step)
}

// probe asks a holder what the lock claims.
func (r *runner) probe(ctx context.Context) ([]string, error) {
	c := r.newCheck(ctx, property{id: "probe"})
	defer c.end()
	p, err := c.startHolder()
	if err != nil {
		return nil, err
	}
	a, err := p.call(order{Op: "probe", Timeout: 10 * time.Second}, 15*time.Second)
	if err != nil {
		return nil, fmt.Errorf("judge: the lock %s could not be made or called: %w", r.adapter.Name, err)
	}
	for _, cl := range a.Claims {
		if strings.HasPrefix(cl, "error: ") {
			return nil, fmt.Errorf("judge: the lock %s could not take a lease on a free key: %s", r.adapter.Name, strings.TrimPrefix(cl, "error: "))
		}
	}
	return a.Claims, nil
}

// property is one thing the judge checks.
type property struct {
	id    string
	step  int
	title string
	needs string // a claim ("refresh", "watchdog", "fence") without which it is not claimed
	slow  bool   // the failover and the partition: minutes, not seconds (Config.Slow)
	run   func(c *check) (Outcome, string)
}

// judge runs one property in a check of its own.
func (r *runner) judge(ctx context.Context, p property) Verdict {
	v := Verdict{ID: p.id, Step: p.step, Title: p.title}
	if p.needs != "" && !r.claims[p.needs] {
		v.Outcome, v.Why = NotClaimed, "the lock has no "+p.needs
		return v
	}
	c := r.newCheck(ctx, p)
	v.Outcome, v.Why = c.safely(p.run)
	if err := c.end(); err != nil && v.Outcome != Fail {
		v.Outcome, v.Why = Fail, strings.TrimPrefix(err.Error(), errNoReturn.Error()+": ")
	}
	v.Took = time.Duration(now() - c.start)
	c.tl.End = now()
	v.Timeline = c.tl
	return v
}

// check is the state of one property's run.
type check struct {
	r     *runner
	ctx   context.Context
	p     property
	start int64
	redis *launch.Redis
	rdb   *redis.Client // the judge's own client of redis
	procs []*proc
	procN int
	tl    *Timeline
	key   string

	mu     sync.Mutex
	lost   map[string]answer // lease -> the watchdog's "lost" event
	cycles []answer          // a burst's
	wake   map[string]chan struct{}
}

func (r *runner) newCheck(ctx context.Context, p property) *check {
	c := &check{r: r, ctx: ctx, p: p, start: now(), redis: r.redis, tl: &Timeline{Start: now()},
		key: "judge:" + p.id + ":lock", lost: map[string]answer{}, wake: map[string]chan struct{}{}}
	c.rdb = redis.NewClient(&redis.Options{Addr: r.redis.Addr, MaxRetries: -1})
	return c
}

// safely runs a property, turning a holder that did not answer into its
// verdict.
func (c *check) safely(run func(*check) (Outcome, string)) (o Outcome, why string) {
	defer func() {
		if e := recover(); e != nil {
			err, ok := e.(noReturn)
			if !ok {
				panic(e)
			}
			o, why = Fail, strings.TrimPrefix(err.Error(), errNoReturn.Error()+": ")
		}
	}()
	return run(c)
}

// noReturn is how a helper gives up on a check: a holder did not answer.
type noReturn struct{ error }

// end stops the check's holders and says whether one left something
// running.
func (c *check) end() error {
	var errs []error
	for _, p := range c.procs {
		if killed := c.killed(p); p.quit() != nil && !killed {
			errs = append(errs, p.quitErr)
		}
	}
	c.rdb.Close()
	return errors.Join(errs...)
}

func (c *check) killed(p *proc) bool {
	return !p.prog.Running() && strings.Contains(p.prog.State(), "killed")
}

// useRedis points the check, and the holders it starts from now on, at
// another server of the judge's.
func (c *check) useRedis(srv *launch.Redis) {
	c.redis = srv
	c.rdb.Close()
	c.rdb = redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
}

// event takes a holder's event.
func (c *check) event(a answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch a.Ev {
	case "lost":
		c.lost[a.Lease] = a
		if ch := c.wake[a.Lease]; ch != nil {
			close(ch)
			delete(c.wake, a.Lease)
		}
	case "cycle":
		c.cycles = append(c.cycles, a)
	}
}

// holder starts a holder process, or gives up on the check.
func (c *check) holder() *proc {
	p, err := c.startHolder()
	if err != nil {
		panic(noReturn{err})
	}
	return p
}

// call sends an order and waits for the answer, at most the order's
// timeout and a few seconds: a holder that does not answer ends the check
// (see safely).
func (c *check) call(p *proc, o order) answer {
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Second
	}
	a, err := p.call(o, o.Timeout+3*time.Second)
	if err != nil {
		panic(noReturn{err})
	}
	return a
}

// who names a lease's holder: "holder A (process 1)".
func who(lease string, p *proc) string { return fmt.Sprintf("holder %s (process %d)", lease, p.n) }

// acquire has p take lease on key, and draws it on the timeline.
func (c *check) acquire(p *proc, lease string, ttl, timeout time.Duration) answer {
	a := c.call(p, order{Op: "acquire", Lease: lease, Key: c.key, TTL: ttl, Timeout: timeout})
	if a.OK {
		label := "TTL " + dur(ttl)
		if a.Fence > 0 {
			label = fmt.Sprintf("fence %d, %s", a.Fence, label)
		}
		c.tl.open(who(lease, p), a.Ret, label)
	}
	return a
}

// acquireFenced is acquire with AcquireFenced.
func (c *check) acquireFenced(p *proc, lease string, ttl, timeout time.Duration) answer {
	a := c.call(p, order{Op: "acquire", Lease: lease, Key: c.key, TTL: ttl, Timeout: timeout, Fenced: true})
	if a.OK {
		c.tl.open(who(lease, p), a.Ret, fmt.Sprintf("fence %d, TTL %s", a.Fence, dur(ttl)))
	}
	return a
}

// acquireMaybeFenced is acquireFenced when fenced, acquire otherwise.
func (c *check) acquireMaybeFenced(p *proc, lease string, ttl time.Duration, fenced bool) answer {
	if fenced {
		return c.acquireFenced(p, lease, ttl, 5*time.Second)
	}
	return c.acquire(p, lease, ttl, 5*time.Second)
}

// release has p give lease back, and ends it on the timeline.
func (c *check) release(p *proc, lease string, o order) answer {
	o.Op, o.Lease = "release", lease
	a := c.call(p, o)
	why := "released"
	if !a.OK {
		why = "release failed"
	}
	c.tl.close(who(lease, p), a.Call, why)
	return a
}

// lapse ends a lease on the timeline where its TTL ran out.
func (c *check) lapse(p *proc, lease string, at int64) { c.tl.close(who(lease, p), at, "expired") }

// sleep waits d, or until the run is stopped.
func (c *check) sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ctx.Done():
		panic(noReturn{c.ctx.Err()})
	case <-t.C:
	}
}

// jitter is d plus up to a fifth of it, drawn from the seed.
func (c *check) jitter(d time.Duration) time.Duration {
	return d + time.Duration(c.r.rng.Int64N(int64(d/5)+1))
}

// keysWithoutTTL lists the keys of the judge's Redis that never expire.
func (c *check) keysWithoutTTL() []string {
	var keys []string
	iter := c.rdb.Scan(c.ctx, 0, "*", 100).Iterator()
	for iter.Next(c.ctx) {
		if ttl, err := c.rdb.PTTL(c.ctx, iter.Val()).Result(); err == nil && ttl == -1 {
			keys = append(keys, iter.Val())
		}
	}
	return keys
}

// awaitLost waits, at most d, for the watchdog of lease to report the
// work cancelled.
func (c *check) awaitLost(lease string, d time.Duration) (answer, bool) {
	c.mu.Lock()
	if a, ok := c.lost[lease]; ok {
		c.mu.Unlock()
		return a, true
	}
	ch := make(chan struct{})
	c.wake[lease] = ch
	c.mu.Unlock()
	select {
	case <-ch:
	case <-time.After(d):
	case <-c.ctx.Done():
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	a, ok := c.lost[lease]
	return a, ok
}
