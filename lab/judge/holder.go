package judge

// The holder role: the judging program started again as a child process,
// which makes the lock with the adapter and runs the judge's orders, one
// JSON line each on stdin, answering each with a JSON line on stdout. Every
// call to the lock happens here, never in the judge itself: a lock that
// panics, hangs or is killed takes a holder process down, and the judge
// goes on.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/wallet/postgres"
)

// holderEnv marks a holder process; it holds the holderConfig as JSON.
const holderEnv = "WALLETLOCK_JUDGE_HOLDER"

type holderConfig struct {
	Lock  string `json:"lock"`  // the adapter's name
	Redis string `json:"redis"` // the judge's Redis
	Owner string `json:"owner"` // of the PostgreSQL rows
}

// order is one line the judge sends a holder.
type order struct {
	ID      int64         `json:"id"`
	Op      string        `json:"op"`
	Lease   string        `json:"lease,omitempty"`
	Key     string        `json:"key,omitempty"`
	TTL     time.Duration `json:"ttl,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	Fenced  bool          `json:"fenced,omitempty"`
	CrashAt int64         `json:"crash_at,omitempty"` // kill the process after this many commands have run
	Lose    bool          `json:"lose,omitempty"`     // lose the reply of the first command that runs
	Cancel  bool          `json:"cancel,omitempty"`   // send it on a context cancelled already
	Hold    time.Duration `json:"hold,omitempty"`     // burst: how long each holds
	N       int           `json:"n,omitempty"`        // burst: cycles per goroutine
	Conc    int           `json:"conc,omitempty"`     // burst: goroutines
	Wallet  int64         `json:"wallet,omitempty"`
	Balance int64         `json:"balance,omitempty"`
}

// answer is one line a holder prints: the answer to an order (ID set), or
// an event (Ev set): "lost", a watchdog cancelled the work; "cycle", one
// acquire-hold-release of a burst.
type answer struct {
	ID         int64    `json:"id,omitempty"`
	Ev         string   `json:"ev,omitempty"`
	Lease      string   `json:"lease,omitempty"`
	Call       int64    `json:"call,omitempty"` // Unix ns, before the call
	Ret        int64    `json:"ret,omitempty"`  // Unix ns, after it returned
	Rel        int64    `json:"rel,omitempty"`  // cycle: before the release
	OK         bool     `json:"ok,omitempty"`
	Err        string   `json:"err,omitempty"`
	NotHeld    bool     `json:"not_held,omitempty"`
	NotClaimed bool     `json:"not_claimed,omitempty"`
	Stale      bool     `json:"stale,omitempty"` // PostgreSQL refused the write
	Lost       bool     `json:"lost,omitempty"`  // the judge lost a reply the call waited for
	Fence      int64    `json:"fence,omitempty"`
	Balance    int64    `json:"balance,omitempty"`
	Cmds       []string `json:"cmds,omitempty"` // the commands the call sent
	Claims     []string `json:"claims,omitempty"`
}

// now is the time every holder and the judge stamp events with: the wall
// clock, one for every process on the machine.
func now() int64 { return time.Now().UnixNano() }

type holder struct {
	c     holderConfig
	lock  Lock
	hooks *hooks
	out   sync.Mutex
	enc   *json.Encoder
	ops   sync.WaitGroup
	base  int // goroutines before the lock was made

	mu     sync.Mutex
	leases map[string]Lease
	stops  map[string]context.CancelFunc
	pool   *pgxpool.Pool
	store  *postgres.Store
}

// serveHolder runs the holder role with the adapter a until stdin ends or
// says quit, and returns the exit code.
func serveHolder(c holderConfig, a Adapter, stdin io.Reader, stdout io.Writer) int {
	h := &holder{c: c, hooks: &hooks{}, enc: json.NewEncoder(stdout), leases: map[string]Lease{},
		stops: map[string]context.CancelFunc{}, base: runtime.NumGoroutine()}
	l, err := a.New(Redis{Addr: c.Redis, h: h.hooks})
	if err != nil {
		fmt.Fprintln(os.Stderr, "judge holder: make the lock:", err)
		return 1
	}
	h.lock = l
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		var o order
		if json.Unmarshal(sc.Bytes(), &o) != nil {
			continue
		}
		if o.Op == "quit" {
			h.quit(o)
			return 0
		}
		h.ops.Add(1)
		go func() {
			defer h.ops.Done()
			h.do(o)
		}()
	}
	return 0
}

func (h *holder) say(a answer) {
	h.out.Lock()
	defer h.out.Unlock()
	h.enc.Encode(a)
}

func (h *holder) lease(name string) Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leases[name]
}

// ctx is the context of one order: cancelled already when it says so,
// bounded by its timeout otherwise.
func (o order) ctx() (context.Context, context.CancelFunc) {
	if o.Cancel {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return context.WithTimeout(context.Background(), o.Timeout)
}

func (h *holder) do(o order) {
	a := answer{ID: o.ID, Lease: o.Lease}
	ctx, cancel := o.ctx()
	defer cancel()
	if o.CrashAt > 0 || o.Lose || o.Op == "acquire" || o.Op == "release" || o.Op == "refresh" || o.Op == "disarm" {
		h.hooks.arm(o.CrashAt, o.Lose)
	}
	a.Call = now()
	var err error
	switch o.Op {
	case "disarm":
	case "probe":
		a.Claims = h.claims(ctx)
	case "acquire":
		var l Lease
		if l, err = h.acquire(ctx, o); err == nil && l != nil {
			h.mu.Lock()
			h.leases[o.Lease] = l
			h.mu.Unlock()
			if f, ok := l.(Fencer); ok {
				a.Fence = f.Fence()
			}
		}
	case "release":
		err = h.lease(o.Lease).Release(ctx)
	case "refresh":
		err = h.lease(o.Lease).Refresh(ctx, o.TTL)
	case "watch":
		err = h.watch(o)
	case "stop":
		h.mu.Lock()
		if stop := h.stops[o.Lease]; stop != nil {
			stop()
		}
		h.mu.Unlock()
	case "burst":
		h.burst(o)
	case "claim", "read":
		a.Balance, err = h.read(ctx, o)
	case "write":
		err = h.write(ctx, o)
	default:
		err = fmt.Errorf("no order %q", o.Op)
	}
	a.Ret = now()
	if o.Op == "acquire" || o.Op == "release" || o.Op == "refresh" {
		a.Cmds, a.Lost = h.hooks.commands(), h.hooks.lostOne()
	}
	a.OK = err == nil
	if err != nil {
		a.Err = safe.Line(err.Error())
		a.NotHeld = errors.Is(err, ErrNotHeld)
		a.NotClaimed = errors.Is(err, ErrNotClaimed)
		a.Stale = errors.Is(err, postgres.ErrStale)
	}
	h.say(a)
}

// acquire takes the lease of an order: with AcquireFenced when it says
// fenced.
func (h *holder) acquire(ctx context.Context, o order) (Lease, error) {
	if !o.Fenced {
		return h.lock.Acquire(ctx, o.Key, o.TTL)
	}
	fl, ok := h.lock.(FencedLock)
	if !ok {
		return nil, ErrNotClaimed
	}
	return fl.AcquireFenced(ctx, o.Key, o.TTL)
}

// claims says what the lock offers beyond Acquire and Release: "refresh",
// "watchdog", "fence". It takes one lease on a key of its own to see.
func (h *holder) claims(ctx context.Context) []string {
	var c []string
	key := "judge:probe:" + h.c.Owner
	l, err := h.lock.Acquire(ctx, key, 2*time.Second)
	if err != nil {
		return []string{"error: " + safe.Line(err.Error())}
	}
	if err := l.Refresh(ctx, 2*time.Second); !errors.Is(err, ErrNotClaimed) {
		c = append(c, "refresh")
	}
	if _, ok := l.(Watcher); ok {
		c = append(c, "watchdog")
	}
	l.Release(ctx)
	if _, ok := h.lock.(FencedLock); ok {
		c = append(c, "fence")
	}
	return c
}

// watch starts the lease's watchdog and reports, as a "lost" event, when
// it cancels the work.
func (h *holder) watch(o order) error {
	w, ok := h.lease(o.Lease).(Watcher)
	if !ok {
		return ErrNotClaimed
	}
	work, stop := w.Watch(context.Background(), o.TTL)
	h.mu.Lock()
	h.stops[o.Lease] = stop
	h.mu.Unlock()
	h.ops.Add(1)
	go func() {
		defer h.ops.Done()
		<-work.Done()
		cause := context.Cause(work)
		e := answer{Ev: "lost", Lease: o.Lease, Ret: now()}
		if cause != nil {
			e.Err = safe.Line(cause.Error())
		}
		h.say(e)
	}()
	return nil
}

// burst runs o.Conc goroutines, each taking the lock o.N times, holding it
// for o.Hold and releasing it, and reports every cycle. It starts no cycle
// after o.Timeout, and each Acquire's context ends then too.
func (h *holder) burst(o order) {
	var wg sync.WaitGroup
	deadline := time.Now().Add(o.Timeout)
	for g := range o.Conc {
		wg.Go(func() {
			for i := range o.N {
				if time.Now().After(deadline) {
					return
				}
				e := answer{Ev: "cycle", Lease: fmt.Sprintf("%s.%d.%d", o.Lease, g, i), Call: now()}
				ctx, cancel := context.WithDeadline(context.Background(), deadline)
				l, err := h.acquire(ctx, o)
				e.Ret = now()
				if f, ok := l.(Fencer); ok && err == nil {
					e.Fence = f.Fence()
				}
				if err != nil {
					e.Err = safe.Line(err.Error())
					cancel()
					h.say(e)
					continue
				}
				time.Sleep(o.Hold)
				e.Rel = now()
				rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
				if err := l.Release(rctx); err != nil {
					e.Err = "release: " + safe.Line(err.Error())
				}
				rcancel()
				cancel()
				e.OK = true
				h.say(e)
			}
		})
	}
	wg.Wait()
}

// quit stops every watchdog, closes the lock if it can be closed, and
// checks that the lock's goroutines are gone within a few seconds.
func (h *holder) quit(o order) {
	h.mu.Lock()
	for _, stop := range h.stops {
		stop()
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.ops.Wait(); close(done) }()
	a := answer{ID: o.ID, OK: true}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		a.OK, a.Err = false, "a call to the lock was still running 3s after the judge was done with it"
	}
	if c, ok := h.lock.(io.Closer); ok {
		c.Close()
	}
	if h.pool != nil {
		h.pool.Close()
	}
	if a.OK {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > h.base && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine() - h.base; n > 0 {
			a.OK, a.Err = false, fmt.Sprintf("%d goroutines the lock started were still running 3s after every lease was given back and the lock closed: %s", n, firstStack())
		}
	}
	h.say(a)
}

// firstStack names where the first goroutine that is not the holder's
// own is parked: its top function.
func firstStack() string {
	buf := make([]byte, 1<<16)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range strings.Split(string(buf), "\n\n") {
		lines := strings.Split(g, "\n")
		if len(lines) < 2 || strings.Contains(g, "judge.(*holder)") || strings.Contains(g, "judge.serveHolder") ||
			strings.Contains(g, "runtime.Stack") {
			continue
		}
		return strings.TrimSpace(lines[1])
	}
	return "?"
}

// read reads the wallet's balance in PostgreSQL through the root's Store:
// with a fence, Claim (the row refuses any lower fence from now on);
// without, a plain Balance.
func (h *holder) read(ctx context.Context, o order) (int64, error) {
	s, err := h.db(ctx)
	if err != nil {
		return 0, err
	}
	if o.Fenced {
		f, ok := h.lease(o.Lease).(Fencer)
		if !ok {
			return 0, ErrNotClaimed
		}
		return s.Claim(ctx, o.Wallet, f.Fence())
	}
	return s.Balance(ctx, o.Wallet)
}

// write writes the balance: WriteFenced with the lease's fence, or a
// plain Write.
func (h *holder) write(ctx context.Context, o order) error {
	s, err := h.db(ctx)
	if err != nil {
		return err
	}
	if o.Fenced {
		f, ok := h.lease(o.Lease).(Fencer)
		if !ok {
			return ErrNotClaimed
		}
		return s.WriteFenced(ctx, o.Wallet, f.Fence(), o.Balance)
	}
	return s.Write(ctx, o.Wallet, o.Balance)
}

func (h *holder) db(ctx context.Context) (*postgres.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.store != nil {
		return h.store, nil
	}
	pool, err := postgres.Connect(ctx)
	if err != nil {
		return nil, err
	}
	s, err := postgres.Open(ctx, pool, h.c.Owner)
	if err != nil {
		pool.Close()
		return nil, err
	}
	h.pool, h.store = pool, s
	return s, nil
}
