package judge

// The holder protocol, and a Go lock's holder. A holder is a process that
// makes the lock and runs the judge's requests, one JSON object a line on
// its stdin, answering each with one JSON object a line on its stdout.
// Any process that speaks it can be judged (Adapter.Command); a lock
// written in Go gets its holder here: the judging program, or the test
// binary, started again with holderEnv set. docs/judge.md has the
// protocol for other languages.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/holder"
)

const (
	// redisEnv gives a holder its Redis: the judge's proxy in front of
	// the judge's redis-server.
	redisEnv = holder.RedisEnv
	// holderEnv marks a Go holder process, and names its adapter.
	holderEnv = holder.AdapterEnv
)

// request is one line the judge writes to a holder.
type request = holder.Request

// answer is one line a holder writes, with when the judge wrote the
// request and read the answer (Unix ns): the judge's clock, not the
// holder's.
type answer struct {
	holder.Answer
	call, ret int64
}

// ms is a duration as the protocol sends it.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fromMS(f float64) time.Duration { return time.Duration(f * float64(time.Millisecond)) }

// serve runs this process as a Go holder of the lock a makes, until stdin
// ends or says quit, and returns the exit code. What the lock prints on
// stdout goes to stderr, where the judge shows it as the lock's output:
// the protocol keeps stdout to itself.
func serve(a Adapter, stdin io.Reader, stdout *os.File) int {
	os.Stdout = os.Stderr
	h := &goHolder{enc: json.NewEncoder(stdout), leases: map[string]Lease{}, stops: map[string]context.CancelFunc{},
		base: runtime.NumGoroutine()}
	l, err := a.New(os.Getenv(redisEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "judge holder: make the lock:", safe.Line(err.Error()))
		return 1
	}
	h.lock = l
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var q request
		if json.Unmarshal(sc.Bytes(), &q) != nil {
			continue
		}
		if q.Op == "quit" {
			h.quit(q)
			return 0
		}
		h.ops.Go(func() { h.do(q) })
	}
	return 0
}

type goHolder struct {
	lock Lock
	out  sync.Mutex
	enc  *json.Encoder
	ops  sync.WaitGroup
	base int // goroutines before the lock was made

	mu     sync.Mutex
	leases map[string]Lease
	stops  map[string]context.CancelFunc
}

func (h *goHolder) say(a answer) {
	h.out.Lock()
	defer h.out.Unlock()
	h.enc.Encode(a)
}

func (h *goHolder) lease(name string) Lease {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.leases[name]
}

// requestCtx is the context of one request: ended already when it says
// so, bounded by its wait otherwise.
func requestCtx(q request) (context.Context, context.CancelFunc) {
	if q.Cancelled {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		return ctx, cancel
	}
	wait := fromMS(q.Wait)
	if wait <= 0 {
		wait = 10 * time.Second
	}
	return context.WithTimeout(context.Background(), wait)
}

func (h *goHolder) do(q request) {
	a := answer{Answer: holder.Answer{ID: q.ID, Lease: q.Lease}}
	ctx, cancel := requestCtx(q)
	defer cancel()
	var err error
	switch q.Op {
	case "hello":
		a.Can = h.can(ctx, q.Key)
	case "acquire":
		var l Lease
		if l, err = h.acquire(ctx, q); err == nil {
			h.mu.Lock()
			h.leases[q.Lease] = l
			h.mu.Unlock()
			if f, ok := l.(Fencer); ok && q.Fenced {
				a.Fence = f.Fence()
			}
		}
	case "release", "refresh", "watch":
		l := h.lease(q.Lease)
		switch {
		case l == nil:
			err = fmt.Errorf("no lease %q in this holder", q.Lease)
		case q.Op == "release":
			err = l.Release(ctx)
		case q.Op == "refresh":
			err = l.Refresh(ctx, fromMS(q.TTL))
		default:
			err = h.watch(l, q)
		}
	case "stop":
		h.mu.Lock()
		if stop := h.stops[q.Lease]; stop != nil {
			stop()
		}
		h.mu.Unlock()
	default:
		err = fmt.Errorf("no request %q", q.Op)
	}
	a.OK = err == nil
	if err != nil {
		a.Error = safe.Line(err.Error())
		a.NotHeld = errors.Is(err, ErrNotHeld)
		a.NotClaimed = errors.Is(err, ErrNotClaimed)
	}
	h.say(a)
}

// acquire takes the lease of a request: with AcquireFenced when it says
// fenced.
func (h *goHolder) acquire(ctx context.Context, q request) (Lease, error) {
	var l Lease
	var err error
	if q.Fenced {
		fl, ok := h.lock.(FencedLock)
		if !ok {
			return nil, ErrNotClaimed
		}
		l, err = fl.AcquireFenced(ctx, q.Key, fromMS(q.TTL))
	} else {
		l, err = h.lock.Acquire(ctx, q.Key, fromMS(q.TTL))
	}
	if err == nil && l == nil {
		err = errors.New("Acquire returned no lease and no error")
	}
	return l, err
}

// claimer is a Lock that knows what it offers without calling Redis
// (Article's).
type claimer interface{ can() []string }

// can says what the lock offers beyond Acquire and Release. A lock that
// does not know it itself takes one lease on key to see whether Refresh
// is claimed, within a few seconds, and what it learns is all it says: a
// lock that hangs or panics here is judged by the checks, which name the
// call.
func (h *goHolder) can(ctx context.Context, key string) []string {
	c := []string{"concurrent"}
	if l, ok := h.lock.(claimer); ok {
		return append(c, l.can()...)
	}
	if _, ok := h.lock.(FencedLock); ok {
		c = append(c, "fence")
	}
	found := make(chan []string, 1)
	go func() {
		defer func() { recover() }() // the checks will say what it does
		l, err := h.lock.Acquire(ctx, key, 2*time.Second)
		if err != nil || l == nil {
			found <- nil
			return
		}
		var more []string
		if err := l.Refresh(ctx, 2*time.Second); !errors.Is(err, ErrNotClaimed) {
			more = append(more, "refresh")
		}
		if _, ok := l.(Watcher); ok {
			more = append(more, "watch")
		}
		l.Release(ctx)
		found <- more
	}()
	select {
	case more := <-found:
		return append(c, more...)
	case <-time.After(3 * time.Second):
		return c
	}
}

// watch starts the lease's watchdog and reports, as a "lost" event, when
// it cancels the work.
func (h *goHolder) watch(l Lease, q request) error {
	w, ok := l.(Watcher)
	if !ok {
		return ErrNotClaimed
	}
	work, stop := w.Watch(context.Background(), fromMS(q.TTL))
	if work == nil {
		return errors.New("Watch returned a nil context")
	}
	h.mu.Lock()
	h.stops[q.Lease] = stop
	h.mu.Unlock()
	h.ops.Go(func() {
		<-work.Done()
		e := answer{Answer: holder.Answer{Event: "lost", Lease: q.Lease}}
		if cause := context.Cause(work); cause != nil {
			e.Error = safe.Line(cause.Error())
		}
		h.say(e)
	})
	return nil
}

// quit stops every watchdog, closes the lock if it can be closed, and
// checks that the lock's goroutines are gone within a few seconds.
func (h *goHolder) quit(q request) {
	h.mu.Lock()
	for _, stop := range h.stops {
		stop()
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.ops.Wait(); close(done) }()
	a := answer{Answer: holder.Answer{ID: q.ID, OK: true}}
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		a.OK, a.Error = false, "a call to the lock was still running 3s after the judge was done with it"
	}
	if c, ok := h.lock.(io.Closer); ok {
		c.Close()
	}
	if a.OK {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > h.base && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if n := runtime.NumGoroutine() - h.base; n > 0 {
			a.OK, a.Error = false, fmt.Sprintf("%d goroutines the lock started were still running 3s after every lease was given back and the lock closed, started by %s", n, starters())
		}
	}
	h.say(a)
}

// starters names the functions that started the goroutines still running
// that are not the holder's own, from their "created by" lines: the lock
// package's functions, with how many each started.
func starters() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := map[string]int{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "judge.(*goHolder)") || strings.Contains(g, "judge.serve") || strings.Contains(g, "runtime.Stack") {
			continue
		}
		for _, l := range strings.Split(g, "\n") {
			if by, ok := strings.CutPrefix(l, "created by "); ok {
				by, _, _ = strings.Cut(by, " in goroutine")
				n[by[strings.LastIndex(by, "/")+1:]]++
			}
		}
	}
	var names []string
	for by, k := range n {
		names = append(names, fmt.Sprintf("%s (%d)", by, k))
	}
	sort.Strings(names)
	if len(names) == 0 {
		return "the runtime (no function of the lock's is named)"
	}
	return strings.Join(names, ", ")
}
