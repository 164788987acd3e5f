package fair_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/lock/fair"
)

// The benchmarks below put one hot key under contention: every contender
// takes the lock, holds it for section (the work of a spend) and releases
// it, again and again. Run them with, for example,
//
//	go test ./lock/fair -run '^$' -bench 'Fair_' -benchtime 2000x
//
// They report, besides ns/op:
//   - handoffs/s: how many times the lock changed hands per second; the
//     serial ceiling is what one contender reaches alone, a little under
//     1/section (500/s for 2 ms);
//   - p50-wait-ms and p99-wait-ms: how long an Acquire waited;
//   - cmds/grant: commands the client sent to Redis per acquisition
//     (the pub/sub connection's SUBSCRIBEs are not counted).
const section = 2 * time.Millisecond

var contenders = []int{1, 2, 8, 50}

// BenchmarkFair_handoff measures the fair lock: a release hands the lock
// to the first waiter, which hears of it by pub/sub.
func BenchmarkFair_handoff(b *testing.B) {
	for _, n := range contenders {
		b.Run(fmt.Sprintf("contenders=%d", n), func(b *testing.B) {
			hotKey(b, n, func(rdb redis.UniversalClient) acquireFunc {
				f := fair.New(rdb)
				b.Cleanup(func() { f.Close() })
				return f.Acquire
			})
		})
	}
}

// BenchmarkFair_versusPolling is the same load on Acquire, which polls:
// a waiter retries every 5 to 15 ms, and whoever asks first after a
// release wins.
func BenchmarkFair_versusPolling(b *testing.B) {
	for _, n := range contenders {
		b.Run(fmt.Sprintf("contenders=%d", n), func(b *testing.B) {
			hotKey(b, n, func(rdb redis.UniversalClient) acquireFunc {
				return func(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error) {
					return lock.Acquire(ctx, rdb, key, ttl)
				}
			})
		})
	}
}

type acquireFunc func(ctx context.Context, key string, ttl time.Duration) (*lock.Lock, error)

// hotKey runs b.N acquisitions of one key, shared among n contenders.
func hotKey(b *testing.B, n int, newAcquire func(redis.UniversalClient) acquireFunc) {
	rdb := testenv.Redis(b)
	key := labtest.Prefix(b, rdb) + "lock:{hot}"
	var sent env.CallCounter
	rdb.AddHook(&sent)
	acquire := newAcquire(rdb)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	var (
		tickets atomic.Int64
		mu      sync.Mutex
		waits   = make([]time.Duration, 0, b.N)
		wg      sync.WaitGroup
	)
	b.ResetTimer()
	sent.Reset()
	start := time.Now()
	for range n {
		wg.Go(func() {
			for tickets.Add(1) <= int64(b.N) {
				asked := time.Now()
				l, err := acquire(ctx, key, 5*time.Second)
				if err != nil {
					b.Error(err)
					return
				}
				waited := time.Since(asked)
				time.Sleep(section)
				if err := l.Release(ctx); err != nil {
					b.Error(err)
					return
				}
				mu.Lock()
				waits = append(waits, waited)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()

	slices.Sort(waits)
	ms := func(q float64) float64 {
		if len(waits) == 0 {
			return 0
		}
		return float64(waits[int(q*float64(len(waits)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(len(waits))/elapsed.Seconds(), "handoffs/s")
	b.ReportMetric(ms(0.50), "p50-wait-ms")
	b.ReportMetric(ms(0.99), "p99-wait-ms")
	b.ReportMetric(float64(sent.Sent())/float64(max(len(waits), 1)), "cmds/grant")
}
