package loadtest_test

import (
	"math"
	"testing"
	"time"

	"example.com/walletlock/lab/loadtest"
)

func TestParallel_oneSectionPerWalletWithAWorker(t *testing.T) {
	tests := []struct {
		name             string
		wallets, workers int
		hot              bool
		want             int
	}{
		{"more workers than wallets", 16, 64, false, 16},
		{"more wallets than workers", 10000, 1000, false, 1000},
		{"as many of each", 8, 8, false, 8},
		{"a hot wallet", 16, 64, true, 1},
		{"a hot wallet and one worker", 16, 1, true, 1},
		{"no workers", 16, 0, false, 0},
		{"no workers on a hot wallet", 16, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadtest.Parallel(tt.wallets, tt.workers, tt.hot); got != tt.want {
				t.Errorf("Parallel(%d, %d, %v) = %d, want %d", tt.wallets, tt.workers, tt.hot, got, tt.want)
			}
		})
	}
}

func TestCeiling_parallelOverTheCriticalSection(t *testing.T) {
	const (
		redisRTT = 100 * time.Microsecond
		pgRTT    = 250 * time.Microsecond
	)
	tests := []struct {
		name     string
		parallel int
		work     time.Duration
		trips    loadtest.RoundTrips
		want     float64
	}{
		// 1 ms + 3 × 0.1 ms = 1.3 ms per section; 16 side by side.
		{"lock on 16 wallets", 16, time.Millisecond, loadtest.RoundTrips{Redis: 3}, 16 / 0.0013},
		// 1 ms + 0.1 ms + 2 × 0.25 ms = 1.6 ms.
		{"fenced on 16 wallets", 16, time.Millisecond, loadtest.RoundTrips{Redis: 1, Postgres: 2}, 16 / 0.0016},
		// 1 ms + 2 × 0.25 ms = 1.5 ms, one wallet.
		{"forupdate on a hot wallet", 1, time.Millisecond, loadtest.RoundTrips{Postgres: 2}, 1 / 0.0015},
		// No work: the round trips alone, 0.25 ms.
		{"version without work", 4, 0, loadtest.RoundTrips{Postgres: 1}, 4 / 0.00025},
		// No round trips: the work alone.
		{"work only", 2, 10 * time.Millisecond, loadtest.RoundTrips{}, 200},
		{"nothing runs", 0, time.Millisecond, loadtest.RoundTrips{Redis: 1}, 0},
		{"a section that takes no time is unknown", 8, 0, loadtest.RoundTrips{}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := loadtest.Ceiling(tt.parallel, tt.work, tt.trips, redisRTT, pgRTT)
			if math.Abs(got-tt.want) > 1e-9*math.Max(1, tt.want) {
				t.Errorf("Ceiling(%d, %v, %+v) = %v, want %v", tt.parallel, tt.work, tt.trips, got, tt.want)
			}
		})
	}
}

func TestEfficiency_achievedOverCeiling(t *testing.T) {
	tests := []struct {
		name              string
		achieved, ceiling float64
		want              float64
	}{
		{"half way", 500, 1000, 0.5},
		{"at the ceiling", 1000, 1000, 1},
		// none overlaps spends of one wallet, so it can pass the ceiling.
		{"above it", 3000, 1000, 3},
		{"nothing accepted", 0, 1000, 0},
		{"unknown ceiling", 500, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadtest.Efficiency(tt.achieved, tt.ceiling); got != tt.want {
				t.Errorf("Efficiency(%v, %v) = %v, want %v", tt.achieved, tt.ceiling, got, tt.want)
			}
		})
	}
}

func TestContenders_workersOnOneWallet(t *testing.T) {
	tests := []struct {
		name             string
		wallets, workers int
		hot              bool
		want             int
	}{
		{"a hot wallet: every worker", 16, 50, true, 50},
		{"one wallet: every worker", 1, 8, false, 8},
		{"spread: workers per wallet", 16, 64, false, 4},
		{"spread, rounded up", 16, 65, false, 5},
		{"more wallets than workers: one", 10000, 1000, false, 1},
		{"no workers", 16, 0, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := loadtest.Contenders(tt.wallets, tt.workers, tt.hot); got != tt.want {
				t.Errorf("Contenders(%d, %d, %v) = %d, want %d", tt.wallets, tt.workers, tt.hot, got, tt.want)
			}
		})
	}
}
