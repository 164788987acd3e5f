package loadtest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/lesson"
)

// Every strategy's round trips are counted in the table, and every
// strategy has a phase in package lesson (lesson.Want panics otherwise).
func TestStrategies_matchTheLesson(t *testing.T) {
	for _, s := range strategies {
		if s.trips.Redis+s.trips.Postgres == 0 && !s.workOutside {
			t.Errorf("%s: no round trips counted", s.name)
		}
		if s.locks && s.trips.Redis == 0 {
			t.Errorf("%s takes a Redis lock but counts no Redis round trip", s.name)
		}
		_ = lesson.Want(lesson.LoadTestStep, s.name)
	}
	if d := Defaults(); time.Duration(len(d.Strategies))*d.Duration > 40*time.Second {
		t.Errorf("the default run takes %v of spending alone; it must stay within about 45 s", time.Duration(len(d.Strategies))*d.Duration)
	}
}

// A row that accepted nothing, or whose spends mostly failed, measured
// nothing, and its verdict says so; a BROKEN balance is shown all the same.
func TestRow_noDataWhenNothingWasMeasured(t *testing.T) {
	tests := []struct {
		name        string
		row         Row
		wantVerdict string
	}{
		{"a clean row", Row{Accepted: 100, Spends: 100, OK: true, Check: "c"}, "OK"},
		{"5% failed", Row{Accepted: 95, Spends: 100, Errors: 3, Unknown: 2, OK: true, Check: "c"}, "OK"},
		{"6% failed", Row{Accepted: 94, Spends: 100, Errors: 6, OK: true, Check: "c"},
			"NO DATA: 6% of the spends failed or got no reply (more than 5%)"},
		{"nothing accepted", Row{Spends: 729609, Errors: 729609, OK: true, Check: "c"}, "NO DATA: no spend accepted"},
		{"nothing accepted and interrupted", Row{Interrupted: true, OK: true, Check: "c"}, "NO DATA: no spend accepted (interrupted)"},
		{"broken with too many errors", Row{Accepted: 1, Spends: 10, Errors: 9, Check: "c", WalletsOff: 1, MoneyOff: 10},
			"BROKEN: 1 wallet off by 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.row
			r.Measured, r.Note = measured(&r)
			if got := r.Verdict(); got != tt.wantVerdict {
				t.Errorf("Verdict() = %q, want %q", got, tt.wantVerdict)
			}
		})
	}
}

// After Ctrl-C, the steps that follow the spends end within the budget:
// a context that lingers ends d after its parent, a wind-down step that
// starts after the end gets a deadline it cannot outlive.
func TestLingering_endsAfterItsParent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, stop := lingering(context.Background(), parent, time.Second)
		defer stop()
		cancel()
		time.Sleep(999 * time.Millisecond)
		synctest.Wait()
		if ctx.Err() != nil {
			t.Fatal("ended before its time")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !errors.Is(context.Cause(ctx), errOutOfTime) {
			t.Errorf("cause %v, want errOutOfTime", context.Cause(ctx))
		}
	})
}

func TestWindDown_boundedByTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		r := &runner{}
		var stopWatching func() bool
		r.stopped, stopWatching = stopClock(parent)
		defer stopWatching()

		running, done := r.windDown(parent, 2*time.Second, 10*time.Second)
		defer done()
		if _, ok := running.Deadline(); !ok {
			t.Error("a step started while the run goes on has no bound")
		}
		time.Sleep(5 * time.Second)
		cancel()
		synctest.Wait()
		after, done2 := r.windDown(parent, 2*time.Second, 10*time.Second)
		defer done2()
		time.Sleep(time.Second)
		if d, ok := after.Deadline(); !ok || time.Until(d) != time.Second {
			t.Errorf("deadline %v (%v), want 1 s from now", d, ok)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if running.Err() == nil || after.Err() == nil {
			t.Errorf("2 s after the end: %v, %v; want both ended", running.Err(), after.Err())
		}
	})
}

// The line about leftovers names what is left and the commands that
// delete it, quoted for a shell, and never a password.
func TestLeftovers_oneLineWithTheCommands(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:7001", Password: "s3cret-never-shown", DB: 2})
	defer rdb.Close()
	pcfg, err := pgxpool.ParseConfig("postgres://walletlock:s3cret-never-shown@db.example:5433/walletlock")
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pcfg) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	l := leftovers(&Env{Redis: rdb, Postgres: pool}, "it's:a*prefix:", true, true, errors.New("context deadline\nexceeded"))
	want := `left Redis keys and PostgreSQL rows behind (context deadline exceeded); delete them with: ` +
		`redis-cli -h 127.0.0.1 -p 7001 -n 2 --askpass --scan --pattern 'it'\''s:a\*prefix:*' | xargs redis-cli -h 127.0.0.1 -p 7001 -n 2 --askpass del ; ` +
		harness.PostgresDeleteOwner("it's:a*prefix:")
	if got := l.String(); got != want || strings.Contains(got, "s3cret") {
		t.Errorf("leftovers:\n got %s\nwant %s", got, want)
	}
	if leftovers(nil, "p:", false, false, errors.New("x")) != nil {
		t.Error("leftovers with nothing left is not nil")
	}
}

// The balances are read back on a clock that starts after the phase: a
// phase that lasts longer than that bound keeps its report (issue 10,
// defect 1: any -duration of 10 s or more, the bound then, lost it).
func TestRun_aPhaseLongerThanTheReadBackBound(t *testing.T) {
	defer func(d time.Duration) { settleTimeout = d }(settleTimeout)
	settleTimeout = 300 * time.Millisecond
	rdb := testenv.Redis(t)
	testenv.Postgres(t)
	c := Defaults()
	c.Strategies = []string{"none", "version"}
	c.Wallets, c.Workers, c.Duration = 2, 2, time.Second
	c.Prefix, c.FirstID = labtest.Prefix(t, rdb), labtest.WalletID(t)
	env, err := Dial(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	rep, err := Run(t.Context(), env, c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Rows) != 2 {
		t.Fatalf("%d rows, want 2", len(rep.Rows))
	}
	for _, r := range rep.Rows {
		if r.Check == "" || r.Seconds < settleTimeout.Seconds() {
			t.Errorf("%s after %.1fs: check %q, note %q", r.Strategy, r.Seconds, r.Check, r.Note)
		}
	}
}

// A run where the pool, not the lock, was the limit: the first table gets
// pool columns and one line naming the pool, its size, the share of the
// time and the flag; the ceiling table says n/a with the reason.
func TestWriteTable_namesThePoolWhenItIsTheLimit(t *testing.T) {
	lockWait := Latency{P50: 0.05, P99: 2, N: 10}
	rep := &Report{
		Params: Params{Workers: 10000, Wallets: 100000, Sweep: []int{10000}},
		Pools:  Pools{Redis: 256, Postgres: 50},
		Rows: []Row{
			{Strategy: "lock", Workers: 10000, LockWait: &lockWait, PoolWait: Latency{P50: 900, P99: 1500},
				PoolWaitShare: 0.91, LockWaitShare: 0.004, PoolLimit: "redis", Ceiling: 8e6, Efficiency: 0.001,
				FIFOBound: 1.1, CeilingNotApplicable: "pool", Measured: true, OK: true},
			{Strategy: "forupdate", Workers: 10000, PoolWait: Latency{P50: 2000, P99: 3000},
				PoolWaitShare: 0.97, PoolLimit: "postgres", Ceiling: 8e6, CeilingNotApplicable: "pool", Measured: true, OK: true},
		},
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	want := "The pool, not the lock, is the limit: lock spent 91% of its time waiting for one of the 256 Redis connections (-pool raises it, up to 1024); " +
		"forupdate spent 97% of its time waiting for one of the 50 PostgreSQL connections (50 is the most -pool gives it), and at most 0% waiting for a lock.\n"
	if !strings.Contains(out, want) {
		t.Errorf("no line naming the pool, want\n%s\nin\n%s", want, out)
	}
	for _, s := range []string{"pool p50", "pool p99", "900.0ms", "n/a (pool)", "n/a (pool): the row spent more"} {
		if !strings.Contains(out, s) {
			t.Errorf("the report lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "1.8x") {
		t.Errorf("the ceiling table gives an efficiency and a wait/bound where they do not apply:\n%s", out)
	}
}

// Where the pool is not the limit, the report is what it was before the
// pool wait was measured: no pool columns, no line, the ceiling's figures.
func TestWriteTable_noPoolColumnsWhereThePoolIsNotTheLimit(t *testing.T) {
	lockWait := Latency{P50: 0.3, P99: 90, N: 10}
	rep := &Report{
		Params: Params{Workers: 64, Wallets: 16, Sweep: []int{64}},
		Pools:  Pools{Redis: 64, Postgres: 50},
		Rows: []Row{{Strategy: "lock", Workers: 64, LockWait: &lockWait, PoolWait: Latency{P99: 0.1},
			PoolWaitShare: 0.001, LockWaitShare: 0.2, Ceiling: 14000, Efficiency: 0.32, FIFOBound: 4.5, Measured: true, OK: true}},
	}
	var b strings.Builder
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, s := range []string{"pool p50", "The pool", "n/a ("} {
		if strings.Contains(out, s) {
			t.Errorf("the report has %q where the pool is not the limit:\n%s", s, out)
		}
	}
	if !strings.Contains(out, "32%") || !strings.Contains(out, "20.0x") {
		t.Errorf("the ceiling table lacks the efficiency 32%% or the wait/bound 20.0x:\n%s", out)
	}
}

func TestSparse_aWorkerForTenWalletsOrFewer(t *testing.T) {
	tests := []struct {
		wallets, workers int
		hot              bool
		want             bool
	}{
		{100000, 10000, false, true},
		{10000, 1000, false, true},
		{16, 64, false, false},
		{100000, 10001, false, false},
		{100000, 10, true, false},
		{1, 1, false, false},
	}
	for _, tt := range tests {
		if got := Sparse(tt.wallets, tt.workers, tt.hot); got != tt.want {
			t.Errorf("Sparse(%d, %d, %v) = %v, want %v", tt.wallets, tt.workers, tt.hot, got, tt.want)
		}
	}
}

func TestProbeWork_timesTheWorkUntilThePhaseEnds(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
	defer cancel()
	median := probeWork(ctx, 2*time.Millisecond)()
	if median < 2 {
		t.Errorf("the work's median under load = %v ms, want at least the 2 ms it sleeps", median)
	}
	if got := probeWork(ctx, 0)(); got != 0 {
		t.Errorf("no work: %v ms, want 0 (not timed)", got)
	}
}
