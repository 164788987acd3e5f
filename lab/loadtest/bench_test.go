package loadtest_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/loadtest"
)

// A thousand workers on ten thousand wallets, every strategy for half a
// second: the run must stay small in memory and set its wallets up fast.
// Run it once:
//
//	go test -run '^$' -bench Run_1000workers -benchtime 1x ./loadtest/
//
// It reports the peak RSS of the process, the slowest setup of 10,000
// wallets, and each strategy's accepted spends per second.
func BenchmarkRun_1000workers10000wallets(b *testing.B) {
	rdb := testenv.Redis(b)
	testenv.Postgres(b)
	c := loadtest.Defaults()
	c.Workers, c.Wallets, c.Duration = 1000, 10000, 500*time.Millisecond
	c.Prefix = labtest.Prefix(b, rdb)
	c.FirstID = labtest.WalletID(b)
	ctx := context.Background()
	env, err := loadtest.Dial(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()

	var rep *loadtest.Report
	for b.Loop() {
		if rep, err = loadtest.Run(ctx, env, c); err != nil {
			b.Fatal(err)
		}
		for _, r := range rep.Rows {
			if !r.OK && r.Strategy != "none" {
				b.Errorf("%s: %s", r.Strategy, r.Verdict())
			}
		}
	}
	var setup float64
	for _, r := range rep.Rows {
		setup = max(setup, r.SetupSeconds)
		b.ReportMetric(r.PerSecond, r.Strategy+"-spends/s")
		if r.Errors > 0 {
			b.Logf("%s: %d errors, the first: %s", r.Strategy, r.Errors, r.FirstError)
		}
	}
	b.ReportMetric(float64(rep.PeakRSSBytes)/(1<<20), "peak-RSS-MiB")
	b.ReportMetric(setup*1000, "max-setup-ms")
}

// What memory a worker costs, at 1,000 and at 10,000 workers, ten
// wallets each: the largest heap plus goroutine stacks while the lock
// strategy runs (each worker and its lease's watchdog), less what was in
// use before, per worker. It should stay flat as the workers grow; run it
// with
//
//	go test -run '^$' -bench Run_bytesPerWorker -benchtime 1x ./loadtest/
func BenchmarkRun_bytesPerWorker(b *testing.B) {
	for _, workers := range []int{1000, 10000} {
		b.Run(fmt.Sprint(workers), func(b *testing.B) {
			rdb := testenv.Redis(b)
			c := loadtest.Defaults()
			c.Strategies = []string{"lock"}
			c.Workers, c.Wallets, c.Duration = workers, 10*workers, time.Second
			c.Prefix = labtest.Prefix(b, rdb)
			c.FirstID = labtest.WalletID(b)
			env, err := loadtest.Dial(b.Context(), c)
			if err != nil {
				b.Fatal(err)
			}
			defer env.Close()
			var peak uint64
			for b.Loop() {
				runtime.GC()
				before := inUse()
				stop := make(chan struct{})
				var sampled sync.WaitGroup
				sampled.Go(func() {
					t := time.NewTicker(20 * time.Millisecond)
					defer t.Stop()
					for {
						select {
						case <-stop:
							return
						case <-t.C:
							if n := inUse(); n > before {
								peak = max(peak, n-before)
							}
						}
					}
				})
				_, err := loadtest.Run(b.Context(), env, c)
				close(stop)
				sampled.Wait()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(peak)/float64(workers), "B/worker")
			b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
		})
	}
}

// inUse is the heap and the goroutine stacks in use.
func inUse() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}

// BenchmarkRun_historyRecording measures what recording every spend's
// history costs the load test: the default load with lock and atomic (the
// fastest strategy, where a recorder's cost would show first), run with
// the history recorded and checked and then with nothing recorded, in
// turn, so that both see the same machine. It reports each strategy's
// rate with recording as a share of its rate without (1 = no cost).
func BenchmarkRun_historyRecording(b *testing.B) {
	rdb := testenv.Redis(b)
	c := loadtest.Defaults()
	c.Strategies = []string{"lock", "atomic"}
	c.Prefix = labtest.Prefix(b, rdb)
	c.FirstID = labtest.WalletID(b)
	env, err := loadtest.Dial(b.Context(), c)
	if err != nil {
		b.Fatal(err)
	}
	defer env.Close()
	rates := map[loadtest.HistoryMode]map[string]float64{}
	for b.Loop() {
		for _, mode := range []loadtest.HistoryMode{loadtest.HistoryCheck, loadtest.HistoryOff} {
			c.History = mode
			rep, err := loadtest.Run(b.Context(), env, c)
			if err != nil {
				b.Fatal(err)
			}
			if rates[mode] == nil {
				rates[mode] = map[string]float64{}
			}
			for _, r := range rep.Rows {
				rates[mode][r.Strategy] += r.PerSecond
			}
		}
	}
	for _, s := range c.Strategies {
		b.ReportMetric(rates[loadtest.HistoryCheck][s]/rates[loadtest.HistoryOff][s], s+"-recorded/off")
	}
}
