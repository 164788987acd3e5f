package loadtest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// BenchmarkDefaultLoad_fairAgainstInProcess runs the load test's default load
// (16 wallets, 64 workers, 1 ms of work, 4 s) with the fair lock and with
// the cheapest lock there can be: a lock inside this one process, a Go
// channel per wallet that serves its waiters in turn, with no Redis in the
// lock at all. It is correct only because every worker lives in one
// process, and it is here as a yardstick: what the serial ceiling leaves
// out on this machine, before any distributed lock adds its share. Run it
// once:
//
//	go test ./loadtest -run '^$' -bench DefaultLoad -benchtime 1x
//
// It reports each lock's rate as a share of the ceiling (%-of-ceiling),
// the fair lock's rate as a share of the in-process lock's, how long the
// 1 ms of work took inside the in-process lock's spends (work-ms) against
// how long it took when the run timed it alone (idle-work-ms), and what
// share of the run a wallet's in-process lock was held (inprocess-held-%):
// the rest of the time it sat free, its wallet wanted by nobody.
func BenchmarkDefaultLoad_fairAgainstInProcess(b *testing.B) {
	yardstick(b, Defaults())
}

// BenchmarkHotWallet_fairAgainstInProcess is the same comparison on one
// hot wallet, at 2, 8 and 50 workers, each spend holding it for 2 ms:
// the load test's -hot -work 2ms -workers 2,8,50. Its metrics carry the worker
// count (fair-%-of-ceiling-at-8).
func BenchmarkHotWallet_fairAgainstInProcess(b *testing.B) {
	c := Defaults()
	c.Hot, c.Work, c.Sweep = true, 2*time.Millisecond, []int{2, 8, 50}
	yardstick(b, c)
}

// yardstick runs c with the fair lock and the in-process lock and reports
// what the benchmarks above say.
func yardstick(b *testing.B, c Config) {
	rdb := testenv.Redis(b)
	testenv.Postgres(b)
	in := &inProcess{}
	strategies = append(strategies, strategy{name: "inprocess", trips: RoundTrips{Redis: 2}, locks: true, spend: in.spend})
	b.Cleanup(func() { strategies = strategies[:len(strategies)-1] })

	c.Strategies = []string{"fair", "inprocess"}
	c.Prefix = labtest.Prefix(b, rdb)
	c.FirstID = labtest.WalletID(b)
	ctx := context.Background()
	env, err := Dial(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()

	var rep *Report
	for b.Loop() {
		in.worked.Store(0)
		in.works.Store(0)
		in.held.Store(0)
		if rep, err = Run(ctx, env, c); err != nil {
			b.Fatal(err)
		}
	}
	at := func(r Row) string {
		if len(c.Sweep) == 0 {
			return ""
		}
		return fmt.Sprintf("-at-%d", r.Workers)
	}
	fair := map[int]float64{}
	for _, r := range rep.Rows {
		if !r.OK {
			b.Errorf("%s at %d workers: %s", r.Strategy, r.Workers, r.Verdict())
		}
		b.ReportMetric(100*r.Efficiency, r.Strategy+"-%-of-ceiling"+at(r))
		switch {
		case r.Strategy == "fair":
			fair[r.Workers] = r.PerSecond
		case r.PerSecond > 0:
			b.ReportMetric(100*fair[r.Workers]/r.PerSecond, "fair-%-of-inprocess"+at(r))
			if len(c.Sweep) == 0 && r.Seconds > 0 {
				held := float64(in.held.Load()) / float64(time.Second)
				b.ReportMetric(100*held/r.Seconds/float64(c.Wallets), "inprocess-held-%")
			}
		}
	}
	if n := in.works.Load(); n > 0 {
		b.ReportMetric(float64(in.worked.Load())/float64(n)/float64(time.Millisecond), "work-ms")
	}
	if rep.WorkTime != nil {
		b.ReportMetric(rep.WorkTime.P50, "idle-work-ms")
	}
}

// inProcess is the yardstick's lock: a channel of one slot per wallet.
// A send takes the lock, and Go hands a freed slot to the goroutine that
// has waited longest. It also times the work of every spend.
type inProcess struct {
	locks  sync.Map // wallet id -> chan struct{}
	worked atomic.Int64
	works  atomic.Int64
	held   atomic.Int64 // nanoseconds any wallet's lock was held, summed
}

func (in *inProcess) spend(r *runner, c call) outcome {
	ch, _ := in.locks.LoadOrStore(c.id, make(chan struct{}, 1))
	slot := ch.(chan struct{})
	start := time.Now()
	select {
	case slot <- struct{}{}:
	case <-c.wait.Done():
		return waitFailed(c, c.wait.Err())
	}
	acquired := time.Now()
	waited := acquired.Sub(start)
	defer func() {
		in.held.Add(int64(time.Since(acquired)))
		<-slot
	}()

	key := ledger.BalanceKey(r.cfg.Prefix, c.id)
	bal, err := r.rdb.Get(c.ctx, key).Int64()
	if err != nil {
		return outcome{err: err, attempts: 1, waited: waited}
	}
	if bal < r.cfg.Amount {
		return outcome{attempts: 1, waited: waited}
	}
	worked := time.Now()
	if err := wallet.Work(c.ctx, r.cfg.Work); err != nil {
		return outcome{err: err, attempts: 1, waited: waited}
	}
	in.worked.Add(int64(time.Since(worked)))
	in.works.Add(1)
	if err := r.rdb.Set(c.ctx, key, bal-r.cfg.Amount, 0).Err(); err != nil {
		return outcome{err: wallet.WriteError(key, err), attempts: 1, waited: waited}
	}
	return outcome{ok: true, attempts: 1, waited: waited}
}
