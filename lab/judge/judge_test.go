package judge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/netns"
	"example.com/walletlock/lock"
)

// root is the article's lock, as lab/judge/locks has it (which this
// package cannot import).
var root = Article[*lock.Lock, lock.Client]{Name: "root", Acquire: lock.Acquire, Release: (*lock.Lock).Release,
	Refresh: (*lock.Lock).Refresh, Watch: (*lock.Lock).Watch, AcquireFenced: lock.AcquireFenced,
	Fence: func(l *lock.Lock) int64 { return l.Fence }, NotHeld: lock.ErrNotHeld}

// Locks that misbehave in the ways a judge must survive, and name.
var misbehaving = []Adapter{
	root.Adapter(),
	{Name: "hangs", New: func(string) (Lock, error) { return hangLock{}, nil }},
	{Name: "panics", New: func(addr string) (Lock, error) { l, err := root.Adapter().New(addr); return panicLock{l}, err }},
	{Name: "leaks", New: func(addr string) (Lock, error) { l, err := root.Adapter().New(addr); return leakLock{l}, err }},
	{Name: "prints", New: func(addr string) (Lock, error) { l, err := root.Adapter().New(addr); return printLock{l}, err }},
	{Name: "blocks", New: func(addr string) (Lock, error) { l, err := root.Adapter().New(addr); return blockLock{l}, err }},
	Article[*lock.Lock, lock.Client]{Name: "nil-lease", Acquire: func(context.Context, lock.Client, string, time.Duration) (*lock.Lock, error) { return nil, nil },
		Release: (*lock.Lock).Release}.Adapter(),
	Article[*lock.Lock, lock.Client]{Name: "nil-watch", Acquire: lock.Acquire, Release: (*lock.Lock).Release,
		Watch: func(*lock.Lock, context.Context, time.Duration) (context.Context, context.CancelFunc) {
			return nil, func() {}
		}}.Adapter(),
}

func TestMain(m *testing.M) {
	if name, ok := os.LookupEnv(holderEnv); ok {
		for _, a := range append(misbehaving, otherShapes...) {
			if a.Name == name {
				os.Exit(serve(a, os.Stdin, os.Stdout))
			}
		}
		os.Exit(2)
	}
	os.Exit(m.Run())
}

type hangLock struct{}

func (hangLock) Acquire(context.Context, string, time.Duration) (Lease, error) { select {} }

type panicLock struct{ Lock }

func (l panicLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x, err := l.Lock.Acquire(ctx, key, ttl)
	return panicLease{x}, err
}

type panicLease struct{ Lease }

func (panicLease) Release(context.Context) error { panic("the lock panics") }

type leakLock struct{ Lock }

func (l leakLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	go leakForever()
	return l.Lock.Acquire(ctx, key, ttl)
}

func leakForever() { select {} }

type printLock struct{ Lock }

func (l printLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	fmt.Printf("debug: got %s ", key) // a learner's first debugging tool, with no newline
	return l.Lock.Acquire(ctx, key, ttl)
}

type blockLock struct{ Lock }

func (l blockLock) Acquire(ctx context.Context, key string, ttl time.Duration) (Lease, error) {
	x, err := l.Lock.Acquire(ctx, key, ttl)
	return blockLease{x}, err
}

type blockLease struct{ Lease }

func (blockLease) Release(context.Context) error { select {} }

// judged judges adapter name (of misbehaving or otherShapes) on the
// properties only, with holders that are this test binary.
func judged(t *testing.T, ctx context.Context, name string, only ...string) Report {
	t.Helper()
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	testenv.Postgres(t)
	var a Adapter
	for _, b := range append(misbehaving, otherShapes...) {
		if b.Name == name {
			a = b
		}
	}
	rep, err := run(ctx, config{adapter: a, o: Options{Only: only, Seed: 1}, exe: os.Args[0]})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		t.Log(v.Line())
	}
	return rep
}

// The article's lock passes every property of the lease, watchdog and
// fencing chapters and the quick faults, pause points included.
func TestRun_rootPassesEveryChapter(t *testing.T) {
	rep := judged(t, context.Background(), "root")
	if len(rep.Verdicts) < 13 {
		t.Errorf("%d verdicts, want every property of the default chapters", len(rep.Verdicts))
	}
	for _, v := range rep.Verdicts {
		if v.Outcome != pass && v.Outcome != unknown {
			t.Errorf("%s: %s: %s", v.ID, v.Outcome, v.Why)
		}
	}
}

// A lock that hangs, panics, leaks goroutines, blocks its Release,
// returns no lease or no context is judged FAIL, each in one line that
// names the call and what went wrong, and the judge still ends.
func TestRun_misbehavingLocksAreNamed(t *testing.T) {
	tests := []struct {
		lock, property string
		want           []string
	}{
		{"hangs", "wait-bounded", []string{"Acquire did not return within", "killed holder"}},
		{"panics", "release-own", []string{"died during its Release", "panic: the lock panics"}},
		{"leaks", "wait-bounded", []string{"goroutines the lock started were still running", "judge.leakLock.Acquire"}},
		{"blocks", "release-own", []string{"Release did not return within"}},
		{"nil-lease", "wait-bounded", []string{"Acquire returned a nil *lock.Lock and no error"}},
		{"nil-watch", "watchdog-keeps", []string{"Watch returned a nil context"}},
	}
	for _, tt := range tests {
		t.Run(tt.lock, func(t *testing.T) {
			rep := judged(t, context.Background(), tt.lock, tt.property)
			if len(rep.Verdicts) != 1 {
				t.Fatalf("got %d verdicts, want 1", len(rep.Verdicts))
			}
			v := rep.Verdicts[0]
			if v.Outcome != fail {
				t.Errorf("got %s: %s; want FAIL", v.Outcome, v.Why)
			}
			for _, w := range tt.want {
				if !strings.Contains(v.Why, w) {
					t.Errorf("the verdict %q does not say %q", v.Why, w)
				}
			}
			if strings.Contains(v.Line(), "\n") || strings.Contains(v.Why, "probe") {
				t.Errorf("the verdict is not one line in the lock's words: %q", v.Line())
			}
		})
	}
}

// A print in the learner's lock, with no newline, is shown as the lock's
// output and breaks nothing.
func TestRun_aDebugPrintIsTheLocksOutput(t *testing.T) {
	rep := judged(t, context.Background(), "prints", "wait-bounded", "release-own")
	for _, v := range rep.Verdicts {
		if v.Outcome != pass {
			t.Errorf("%s: %s: %s", v.ID, v.Outcome, v.Why)
		}
		if !strings.Contains(strings.Join(v.Output, "\n"), "debug: got judge:") {
			t.Errorf("%s: the lock's print is not shown as its output: %q", v.ID, v.Output)
		}
	}
}

// A judging stopped in the middle of a check says so: that check is
// unknown, never a FAIL of the lock, and the report says what stopped it.
func TestRun_anInterruptionIsNoVerdict(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(3*time.Second, func() { cancel(errors.New("Ctrl-C")) })
	rep := judged(t, ctx, "root")
	if rep.Interrupted != "Ctrl-C" {
		t.Errorf("Interrupted = %q, want Ctrl-C", rep.Interrupted)
	}
	if rep.Failed() {
		t.Errorf("an interrupted judging failed the lock: %s", rep.Count())
	}
	if n := len(rep.Verdicts); n == 0 || rep.Verdicts[n-1].Outcome != unknown || !strings.Contains(rep.Verdicts[n-1].Why, "stopped") {
		t.Errorf("the check that ran when it stopped: %+v; want unknown, saying the judging was stopped", rep.Verdicts)
	}
	if runtime.GOOS == "linux" {
		if left := launch.DeadTemps(folderPrefix); len(left) > 0 {
			t.Errorf("left folders behind: %q", left)
		}
	}
}

// The partition, run where this machine can make network namespaces: the
// judge's three hosts, each with a redis-server and a Sentinel, the
// primary's cut off from the other two, which promote a replica; the
// article's fenced lock keeps the money right through it.
func TestRun_partitionKeepsTheMoneyRight(t *testing.T) {
	if err := netns.CanPartition(); err != nil {
		if os.Getenv("CI") != "" { // CI runs as root: the partition must be judged
			t.Fatal(err)
		}
		t.Skip(err)
	}
	rep := judged(t, t.Context(), "root", "partition")
	if len(rep.Verdicts) != 1 || rep.Verdicts[0].ID != "partition" {
		t.Fatalf("got %d verdicts, want the partition's one", len(rep.Verdicts))
	}
	if v := rep.Verdicts[0]; v.Outcome != pass {
		t.Errorf("got %s: %s; want pass", v.Outcome, v.Why)
	}
}
