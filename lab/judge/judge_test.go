package judge_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
)

// Locks that misbehave in the ways a judge must survive.
var (
	hangs  = judge.Adapter{Name: "hangs", New: func(judge.Redis) (judge.Lock, error) { return hangLock{}, nil }}
	panics = judge.Adapter{Name: "panics", New: func(judge.Redis) (judge.Lock, error) { return panicLock{}, nil }}
	leaks  = judge.Adapter{Name: "leaks", New: func(r judge.Redis) (judge.Lock, error) {
		inner, err := locks.Root.New(r)
		return leakLock{inner}, err
	}}
)

func TestMain(m *testing.M) {
	judge.Holder(append(locks.All(), hangs, panics, leaks)...)
	os.Exit(m.Run())
}

// run judges adapter a in holder processes that are this test binary.
func run(t *testing.T, a judge.Adapter, only ...string) judge.Report {
	t.Helper()
	if _, err := launch.RedisBinary(); err != nil {
		t.Skip(err)
	}
	testenv.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rep, err := judge.Run(ctx, judge.Config{Adapter: a, Only: only, Seed: 1, Exe: os.Args[0], Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		t.Log(v.Line())
	}
	return rep
}

// The article's lock passes every property of steps 2 and 3.
func TestRun_rootPassesSteps2And3(t *testing.T) {
	rep := run(t, locks.Root)
	for _, v := range rep.Verdicts {
		if (v.Step == 2 || v.Step == 3) && v.Outcome != judge.Pass && v.Outcome != judge.Unknown {
			t.Errorf("%s: got %s, want pass: %s", v.ID, v.Outcome, v.Why)
		}
		if v.Step == 5 && v.Outcome != judge.Pass && v.Outcome != judge.Unknown {
			t.Errorf("%s: got %s, want pass (the root's lock has fences): %s", v.ID, v.Outcome, v.Why)
		}
	}
}

// A lock that hangs, panics or leaks goroutines is judged "did not
// return", and the judge still ends.
func TestRun_misbehavingLockDidNotReturn(t *testing.T) {
	tests := []struct {
		a        judge.Adapter
		property string
		want     string
	}{
		{hangs, "wait-bounded", "did not return within"},
		{panics, "release-own", "panic: the lock panics"},
		{leaks, "wait-bounded", "goroutines the lock started were still running"},
	}
	for _, tt := range tests {
		t.Run(tt.a.Name, func(t *testing.T) {
			rep := run(t, tt.a, tt.property)
			if len(rep.Verdicts) != 1 {
				t.Fatalf("got %d verdicts, want 1", len(rep.Verdicts))
			}
			if v := rep.Verdicts[0]; v.Outcome != judge.Fail || !strings.Contains(v.Why, tt.want) {
				t.Errorf("got %s: %s; want FAIL saying %q", v.Outcome, v.Why, tt.want)
			}
		})
	}
}

// Each mutant of the root's lock fails on the property its mistake
// breaks, named in the verdict.
func TestMutants_failTheirProperty(t *testing.T) {
	if _, err := launch.RedisBinary(); err != nil {
		t.Skip(err)
	}
	testenv.Postgres(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range judge.Mutants {
		t.Run(m.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			b, err := judge.BuildMutant(ctx, root, m)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Remove()
			out, err := exec.CommandContext(ctx, b.Exe, "-json", "-seed", "1", "-only", m.Property).Output()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			var rep judge.Report
			if err := json.Unmarshal(out, &rep); err != nil || len(rep.Verdicts) != 1 {
				t.Fatalf("report %q: %v", out, err)
			}
			v := rep.Verdicts[0]
			t.Log(v.Line())
			if v.ID != m.Property || v.Outcome != judge.Fail {
				t.Errorf("got %s on %s, want FAIL on %s", v.Outcome, v.ID, m.Property)
			}
		})
	}
}

type hangLock struct{}

func (hangLock) Acquire(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	if strings.Contains(key, "probe") {
		return nopLease{}, nil
	}
	select {} // ignores ctx
}

type panicLock struct{}

func (panicLock) Acquire(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	if strings.Contains(key, "probe") {
		return nopLease{}, nil
	}
	panic("the lock panics")
}

type nopLease struct{}

func (nopLease) Release(context.Context) error                { return nil }
func (nopLease) Refresh(context.Context, time.Duration) error { return judge.ErrNotClaimed }

// leakLock is the root's lock, starting a goroutine that never ends on
// every Acquire.
type leakLock struct{ inner judge.Lock }

func (l leakLock) Acquire(ctx context.Context, key string, ttl time.Duration) (judge.Lease, error) {
	go func() { select {} }()
	return l.inner.Acquire(ctx, key, ttl)
}

// A learner's package with the root lock's API is judged through the
// adapter the judge generates: only what it has is claimed.
func TestBuildPackage_judgesALearnersPackage(t *testing.T) {
	if _, err := launch.RedisBinary(); err != nil {
		t.Skip(err)
	}
	testenv.Postgres(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b, err := judge.BuildPackage(ctx, root, filepath.Join(root, "lab", "judge", "learner"), "./lab/judge/learner")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove()
	if got, want := strings.Join(b.Claims, ","), "Acquire,Release"; got != want {
		t.Errorf("claims %s, want %s", got, want)
	}
	out, err := exec.CommandContext(ctx, b.Exe, "-json", "-seed", "1", "-only", "release-own,watchdog-keeps").Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var rep judge.Report
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		want := map[string]judge.Outcome{"release-own": judge.Pass, "watchdog-keeps": judge.NotClaimed}[v.ID]
		if v.Outcome != want {
			t.Errorf("%s: got %s, want %s: %s", v.ID, v.Outcome, want, v.Why)
		}
	}
}

// The page's section on bsm/redislock is written by WriteMatrix, so that
// make judge-matrix keeps it; docs/judge.md must hold it as written.
func TestWriteMatrix_keepsTheRedislockSection(t *testing.T) {
	var b strings.Builder
	if err := judge.WriteMatrix(&b, nil, 1, "redis-server", time.Second); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	start := strings.Index(out, "## What bsm/redislock leaves to its caller")
	end := strings.Index(out, "## The mutants")
	if start < 0 || end < start {
		t.Fatalf("WriteMatrix wrote no section on bsm/redislock before the mutants:\n%s", out)
	}
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "judge.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), out[start:end]) {
		t.Errorf("docs/judge.md does not hold the section WriteMatrix writes on bsm/redislock; run make judge-matrix, or copy it from lab/judge/matrix.go:\n%s", out[start:end])
	}
}
