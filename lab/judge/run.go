package judge

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/holder"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/netns"
	"example.com/walletlock/lab/internal/wire"
)

// config is one judging of one lock.
type config struct {
	adapter Adapter
	o       Options
	// exe and args start a Go holder: this program again (for a test
	// binary, with the flags that run the same test).
	exe     string
	args    []string
	workDir string        // where holders run
	say     func(Verdict) // each verdict as soon as it is known, when not nil
	note    func(string)  // a line about the judging itself (what it cleaned up), when not nil
}

// chapters are the chapters' names, in the order the judge goes through
// them, with the article's step that teaches each.
var chapters = []struct {
	name string
	step int
}{{"lease", 2}, {"watchdog", 3}, {"fencing", 5}, {"faults", 0}, {"guards", 0}}

// property is one thing the judge checks.
type property struct {
	id      string
	chapter string
	title   string
	needs   string // what the lock must offer ("refresh", "watch", "fence"), or it is not claimed
	slow    bool   // a minute, not seconds: only when its chapter is named
	run     func(c *check) (outcome, why, fix string)
}

// runner is one judging.
type runner struct {
	c     config
	procs *launch.Group
	dir   string
	owner string // of the PostgreSQL rows
	rng   *mrand.Rand
	can   map[string]bool
	redis *launch.Redis // the judge's own Redis
	db    *db           // opened by the first check that needs PostgreSQL
	// concurrent: a holder answers several requests at once (hello's
	// "concurrent"), so a burst runs lanes in each.
	concurrent bool
	glossed    map[string]bool
}

// gloss is g the first time the run says word, "" after: a term is
// explained where it first appears.
func (r *runner) gloss(word, g string) string {
	if r.glossed[word] {
		return ""
	}
	if r.glossed == nil {
		r.glossed = map[string]bool{}
	}
	r.glossed[word] = true
	return g
}

// run judges the lock c.adapter makes, property by property. It starts a
// redis-server of its own, and holder processes behind proxies of its
// own; it ends every one of them, and deletes the PostgreSQL rows it
// wrote, before it returns, also when ctx ends first.
func run(ctx context.Context, c config) (rep Report, err error) {
	start := time.Now()
	rep = Report{Lock: c.adapter.Name, Seed: c.o.Seed}
	r := &runner{c: c, procs: new(launch.Group), owner: "judge:" + strings.ToLower(rand.Text()[:10]),
		rng: mrand.New(mrand.NewPCG(uint64(c.o.Seed), 0x6a75646765))}
	defer func() { rep.Took = time.Since(start) }()
	defer r.procs.KillAll(5 * time.Second)
	dir, release, err := workFolder()
	if err != nil {
		return rep, err
	}
	defer release()
	r.dir = dir
	if r.redis, err = r.procs.StartRedis(ctx, r.dir); err != nil {
		return rep, fmt.Errorf("judge: start a redis-server of its own: %w", err)
	}
	defer r.closeDB()
	if rep.Claims, err = r.hello(ctx); err != nil {
		return rep, err
	}
	r.can = map[string]bool{}
	for _, cl := range rep.Claims {
		r.can[cl] = true
	}
	for _, p := range properties {
		if !r.wants(p) {
			continue
		}
		if ctx.Err() != nil {
			break
		}
		v := r.judge(ctx, p)
		rep.Verdicts = append(rep.Verdicts, v)
		if c.say != nil {
			c.say(v)
		}
	}
	if ctx.Err() != nil {
		rep.Interrupted = interruption(ctx)
	}
	return rep, nil
}

// interruption says what ended ctx, for the report.
func interruption(ctx context.Context) string {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause.Error()
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "the test's deadline"
	}
	return "interrupted"
}

// wants says whether the run judges p: by id when Only names some, and
// then within the chapters named; the slow faults and the guards only
// when their chapter is named.
func (r *runner) wants(p property) bool {
	named := slices.Contains(r.c.o.Chapters, p.chapter)
	if len(r.c.o.Chapters) > 0 && !named {
		return false
	}
	if len(r.c.o.Only) > 0 {
		return slices.Contains(r.c.o.Only, p.id)
	}
	if p.slow || p.chapter == "guards" {
		return named
	}
	return true
}

// hello asks a first holder what the lock offers.
func (r *runner) hello(ctx context.Context) ([]string, error) {
	c := r.newCheck(ctx, property{id: "hello"})
	defer c.end()
	p, err := r.start(ctx, "A", r.redis.Addr, c.event)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	q := request{Op: "hello", Key: "judge:hello:lock", Wait: 10_000}
	ch, call := p.send(q)
	a, err := p.await(q, ch, call, 15*time.Second)
	if err != nil {
		return nil, fmt.Errorf("judge: the lock %s could not be made or called: %w", r.c.adapter.Name, errors.Unwrap(err))
	}
	if !a.OK {
		return nil, fmt.Errorf("judge: the lock %s could not be made or called: %s", r.c.adapter.Name, a.Error)
	}
	var can []string
	for _, x := range a.Can {
		if x != "concurrent" {
			can = append(can, x)
		}
	}
	r.concurrent = slices.Contains(a.Can, "concurrent")
	return can, nil
}

// judge runs one property in a check of its own.
func (r *runner) judge(ctx context.Context, p property) Verdict {
	v := Verdict{ID: p.id, Chapter: p.chapter, Step: stepOf(p.chapter), Title: p.title}
	if p.needs != "" && !r.can[p.needs] {
		v.Outcome, v.Why = notClaimed, "the lock has no "+map[string]string{"refresh": "refresh", "watch": "watchdog", "fence": "fence"}[p.needs]
		return v
	}
	c := r.newCheck(ctx, p)
	v.Outcome, v.Why, v.Fix = c.safely(p.run)
	if err := c.end(); err != nil && v.Outcome != fail {
		v.Outcome, v.Why, v.Fix = fail, strings.TrimPrefix(err.Error(), errNoReturn.Error()+": "), leakFix(err)
	}
	if ctx.Err() != nil && v.Outcome != pass {
		v.Outcome, v.Why, v.Fix = unknown, "not finished: the judging was stopped ("+interruption(ctx)+") while this check ran", ""
	}
	for _, p := range c.procs {
		v.Output = append(v.Output, p.output(3)...)
	}
	v.Took = time.Duration(now() - c.start)
	c.tl.End = now()
	v.Timeline = c.tl
	return v
}

func stepOf(chapter string) int {
	for _, ch := range chapters {
		if ch.name == chapter {
			return ch.step
		}
	}
	return 0
}

// check is the state of one property's run.
type check struct {
	r        *runner
	ctx      context.Context
	p        property
	start    int64
	upstream string        // the Redis the holders started from now on talk to
	rdb      *redis.Client // the judge's own client of it, not through a proxy
	procs    []*proc
	tl       *timeline
	key      string
	keys     int

	servers   []*launch.Redis // started for this check (the faults)
	link      *wire.Proxy     // a replica's link to its primary (the failover)
	net       *netns.Net      // the partition's hosts
	hosts     []string        // the partition's servers, by their uplink addresses
	sentinels []string        // the Sentinels that watch the check's primary
	cut       int64           // when the partition began
	atEnd     []func()

	mu   sync.Mutex
	lost map[string]answer // lease -> the watchdog's "lost" event
	wake map[string]chan struct{}
}

func (r *runner) newCheck(ctx context.Context, p property) *check {
	c := &check{r: r, ctx: ctx, p: p, start: now(), tl: &timeline{Start: now()},
		lost: map[string]answer{}, wake: map[string]chan struct{}{}}
	c.useRedis(r.redis.Addr)
	c.newKey()
	return c
}

// newKey gives the check a key no holder has touched yet.
func (c *check) newKey() string {
	c.keys++
	c.key = fmt.Sprintf("judge:%s:%d:lock", c.p.id, c.keys)
	return c.key
}

// useRedis points the check, and the holders it starts from now on, at
// another server of the judge's.
func (c *check) useRedis(addr string) {
	c.upstream = addr
	if c.rdb != nil {
		c.rdb.Close()
	}
	c.rdb = redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
}

// safely runs a property, turning a holder that did not answer into its
// verdict.
func (c *check) safely(run func(*check) (string, string, string)) (o, why, fix string) {
	defer func() {
		if e := recover(); e != nil {
			err, ok := e.(noReturn)
			if !ok {
				panic(e)
			}
			o, why, fix = fail, strings.TrimPrefix(err.Error(), errNoReturn.Error()+": "), crashFix(err.Error())
		}
	}()
	return run(c)
}

// noReturn is how a helper gives up on a check: a holder did not answer.
type noReturn struct{ error }

// end stops the check's holders and says whether one left something
// running.
func (c *check) end() error {
	var why []string
	for _, p := range c.procs {
		if killed := c.killed(p); p.quit() != nil && !killed {
			w := strings.TrimPrefix(p.quitErr.Error(), errNoReturn.Error()+": ")
			if !slices.Contains(why, w) {
				why = append(why, w)
			}
		}
	}
	c.rdb.Close()
	for i := len(c.atEnd) - 1; i >= 0; i-- { // the servers before their network
		c.atEnd[i]()
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %s", errNoReturn, strings.Join(why, "; "))
}

func (c *check) killed(p *proc) bool {
	return !p.prog.Running() && strings.Contains(p.prog.State(), "killed")
}

// event takes a holder's event: a watchdog that cancelled the work.
func (c *check) event(p *proc, a answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if a.Event != "lost" {
		return
	}
	c.lost[a.Lease] = a
	if ch := c.wake[a.Lease]; ch != nil {
		close(ch)
		delete(c.wake, a.Lease)
	}
}

// holder starts the check's next holder (A, B, C...), or gives up on the
// check.
func (c *check) holder() *proc {
	name := string(rune('A' + len(c.procs)%26))
	if len(c.procs) >= 26 {
		name += fmt.Sprint(len(c.procs) / 26)
	}
	p, err := c.r.start(c.ctx, name, c.upstream, c.event)
	if err != nil {
		panic(noReturn{err})
	}
	c.procs = append(c.procs, p)
	c.tl.row(p.row())
	return p
}

// row is the holder's row on the drawing.
func (p *proc) row() string { return "holder " + p.name }

// call sends a request and waits for its answer, at most its wait and a
// few seconds: a holder that does not answer ends the check (see safely).
func (c *check) call(p *proc, q request) answer {
	ch, call := p.send(c.fill(q))
	return c.await(p, q, ch, call)
}

// fill gives a request its defaults: a wait of 5 s, the check's key.
func (c *check) fill(q request) request {
	if q.Wait == 0 && !q.Cancelled {
		q.Wait = 5000
	}
	if q.Key == "" && (q.Op == "acquire" || q.Op == "hello") {
		q.Key = c.key
	}
	return q
}

func (c *check) await(p *proc, q request, ch <-chan holder.Answer, call int64) answer {
	a, err := p.await(q, ch, call, fromMS(q.Wait)+3*time.Second)
	if err != nil {
		panic(noReturn{err})
	}
	if a.Lease == "" {
		a.Lease = q.Lease
	}
	return a
}

// acquire has p take a lease on the check's key (fenced when asked), and
// draws it.
func (c *check) acquire(p *proc, ttl, wait time.Duration, fenced bool) answer {
	p.leases++
	q := request{Op: "acquire", Lease: fmt.Sprintf("%s%d", p.name, p.leases), TTL: ms(ttl), Wait: ms(wait), Fenced: fenced}
	a := c.call(p, q)
	if a.OK {
		c.drawLease(p, a, ttl)
	}
	return a
}

// drawLease opens a's lease on p's row.
func (c *check) drawLease(p *proc, a answer, ttl time.Duration) {
	label := "TTL " + dur(ttl)
	if a.Fence > 0 {
		label = fmt.Sprintf("fence %d, %s", a.Fence, label)
	}
	c.tl.open(p.row(), a.ret, label)
}

// release has p give lease back, and ends it on the drawing.
func (c *check) release(p *proc, lease answer, q request) answer {
	q.Op, q.Lease = "release", lease.Lease
	a := c.call(p, q)
	why := "released"
	if !a.OK {
		why = "release failed"
	}
	c.tl.close(p.row(), a.call, why)
	return a
}

// lapse ends p's lease on the drawing where its TTL ran out.
func (c *check) lapse(p *proc, at int64) { c.tl.close(p.row(), at, "expired") }

// sleep waits d, or until the run is stopped.
func (c *check) sleep(d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.ctx.Done():
		panic(noReturn{context.Cause(c.ctx)})
	case <-t.C:
	}
}

// until sleeps until the Unix ns time t.
func (c *check) until(t int64) { c.sleep(time.Until(time.Unix(0, t))) }

// jitter is d plus up to a fifth of it, drawn from the seed.
func (c *check) jitter(d time.Duration) time.Duration {
	return d + time.Duration(c.r.rng.Int64N(int64(d/5)+1))
}

// sec is a time of the check as its sentences give it: seconds since its
// drawing began (the check's start, or the pause point's that broke it).
func (c *check) sec(t int64) string { return fmt.Sprintf("%.2fs", float64(t-c.tl.Start)/1e9) }

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

// sent lists the commands a holder's proxy saw since its last arming, as
// a sentence gives them: "SET judge:x … PX 300 NX, EVALSHA on judge:x".
func sent(p *proc) string {
	var cmds []string
	for _, cmd := range p.wire.Log() {
		cmds = append(cmds, cmd.String())
	}
	switch n := len(cmds); {
	case n == 0:
		return "nothing"
	case n > 4:
		return fmt.Sprintf("%s and %d more", strings.Join(cmds[:4], ", "), n-4)
	}
	return strings.Join(cmds, ", ")
}
