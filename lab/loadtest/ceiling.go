package loadtest

import (
	"context"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"example.com/walletlock/wallet"
)

// The ceiling is the best rate any strategy could reach on this workload
// and this machine. Spends of one wallet must not overlap, so each wallet
// is a queue of critical sections, each at least the work plus the round
// trips the strategy makes inside it; wallets run side by side, as many as
// have a worker. So:
//
//	ceiling = parallel / (work + round trips × measured round-trip time)
//
// The work is timed too (see measureWork): a 2 ms sleep takes longer than
// 2 ms. It leaves out what it cannot know in advance: CPU (two busy cores
// run the workers, Redis and PostgreSQL at once), the pool's limit, the
// waiters' sleeps between attempts. The gap between a strategy and its
// ceiling is what these cost it.

// Parallel is how many critical sections can run at once: one per wallet
// that has a worker, one in all when every spend goes to one wallet (hot).
func Parallel(wallets, workers int, hot bool) int {
	if hot {
		return min(1, wallets, workers)
	}
	return max(0, min(wallets, workers))
}

// Ceiling returns the best possible rate of accepted spends per second:
// parallel critical sections, each taking work plus trips round trips of
// redisRTT and pgRTT. It returns 0, meaning unknown, when there is nothing
// to run or the section would take no time at all.
func Ceiling(parallel int, work time.Duration, trips RoundTrips, redisRTT, pgRTT time.Duration) float64 {
	section := work + time.Duration(trips.Redis)*redisRTT + time.Duration(trips.Postgres)*pgRTT
	if parallel < 1 || section <= 0 {
		return 0
	}
	return float64(parallel) / section.Seconds()
}

// Efficiency is achieved / ceiling, 0 when the ceiling is unknown (0).
func Efficiency(achieved, ceiling float64) float64 {
	if ceiling <= 0 {
		return 0
	}
	return achieved / ceiling
}

// pings is how many round trips measureRTT times per service: enough for a
// steady median on a noisy machine, a few tens of milliseconds locally.
const pings = 300

// RTT is a measured round trip (or the work: see measureWork), in
// milliseconds.
type RTT struct {
	P50 float64 `json:"p50_ms"` // used for the ceiling
	Min float64 `json:"min_ms"`
	N   int     `json:"n"`
}

// duration is the median as a time.Duration, 0 for a service not measured.
func (r *RTT) duration() time.Duration {
	if r == nil {
		return 0
	}
	return time.Duration(r.P50 * float64(time.Millisecond))
}

// measureRTT times n sequential calls of ping and returns the median and the
// fastest. The median, not the minimum, goes into the ceiling: a machine
// that answers in 80 µs once and in 150 µs most of the time is a 150 µs
// machine.
func measureRTT(ctx context.Context, n int, ping func(context.Context) error) (*RTT, error) {
	h := newHistogram()
	for range n {
		start := time.Now()
		if err := ping(ctx); err != nil {
			return nil, err
		}
		record(h, time.Since(start))
	}
	return &RTT{P50: ms(h.ValueAtQuantile(50)), Min: ms(h.Min()), N: n}, nil
}

// measureWork times how long the work really takes on this machine. A
// timer fires late, by tens to hundreds of microseconds on a busy machine:
// at 2 ms of work that is a tenth of the critical section, which a ceiling
// built on the nominal 2 ms would blame on the strategies. Work above 20
// ms is not timed (nil): the delay hardly counts there.
func measureWork(ctx context.Context, work time.Duration) (*RTT, error) {
	if work <= 0 || work > 20*time.Millisecond {
		return nil, nil
	}
	n := min(100, int(250*time.Millisecond/work))
	rtt, err := measureRTT(ctx, n, func(ctx context.Context) error { return wallet.Work(ctx, work) })
	if err != nil {
		return nil, fmt.Errorf("loadtest: time the work: %w", err)
	}
	return rtt, nil
}

// probeWork times the work beside a phase's workers until ctx ends, as
// measureWork does, under the load its spends' work ran under, and
// returns what reads the median in ms (0: not timed).
func probeWork(ctx context.Context, work time.Duration) func() float64 {
	if work <= 0 || work > 20*time.Millisecond {
		return func() float64 { return 0 }
	}
	h := newHistogram()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			start := time.Now()
			if wallet.Work(ctx, work) == nil {
				record(h, time.Since(start))
			}
		}
	}()
	return func() float64 {
		<-done
		if h.TotalCount() == 0 {
			return 0
		}
		return ms(h.ValueAtQuantile(50))
	}
}

// Latencies are recorded in microseconds, from 1 µs to 10 minutes, to three
// significant digits: about 140 KB per histogram.
const histMax = int64(10 * time.Minute / time.Microsecond)

func newHistogram() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMax, 3) }

// record adds d, clamped to the histogram's range.
func record(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(d.Microseconds(), 1), histMax))
}

// ms turns microseconds into milliseconds.
func ms(us int64) float64 { return float64(us) / 1000 }
