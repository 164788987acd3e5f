package loadtest_test

import (
	"context"
	"testing"
	"time"

	"example.com/walletlock/internal/loadtest"
	"example.com/walletlock/internal/testenv"
)

// A thousand workers on ten thousand wallets, every strategy for half a
// second: the run must stay small in memory and set its wallets up fast.
// Run it once:
//
//	go test -run '^$' -bench Run_1000workers -benchtime 1x ./internal/loadtest/
//
// It reports the peak RSS of the process, the slowest setup of 10,000
// wallets, and each strategy's accepted spends per second.
func BenchmarkRun_1000workers10000wallets(b *testing.B) {
	rdb := testenv.Redis(b)
	testenv.Postgres(b)
	c := loadtest.Defaults()
	c.Workers, c.Wallets, c.Duration = 1000, 10000, 500*time.Millisecond
	c.Prefix = testenv.Prefix(b, rdb)
	c.FirstID = testenv.WalletID(b)
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
