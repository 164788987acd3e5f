package workshop

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/charts"
)

// lines is a writer that keeps what was written, for a test to wait on.
type lines struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lines) count(s string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), s)
}

// waitFor polls cond until it holds, or fails the test after a minute: a
// bound on something that must happen, not a measure.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 3 minutes", what)
		}
	}
}

// runRacers runs the racers of names (each with its lock) and the house's in
// room r, and waits until every one is ready; they leave when the race
// is over, and the test waits for them.
func runRacers(t *testing.T, r *Room, locks map[string]string) *lines {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	out := &lines{}
	for _, h := range HouseLocks {
		locks[h.Name] = h.Lock
	}
	for name, lock := range locks {
		wg.Go(func() {
			if err := Race(ctx, r.Line, name, lock, out, out); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	waitFor(t, "every racer ready", func() bool { return out.count("spenders ready") == len(locks) })
	return out
}

func row(round charts.Round, lock string) charts.RaceRow {
	for _, r := range round.Rows {
		if strings.HasPrefix(r.Lock, lock) {
			return r
		}
	}
	return charts.RaceRow{Lock: lock + ": no row"}
}

// The race on loopback: two laptops and the house's three locks. Round 1
// holds each to the lesson: a stopped spender past its lease loses a
// spend to plain writes (the article's lock, and its mutant), and fenced
// writes keep the money. In round 2, one wallet, the plain writes lose
// money for everyone, and the page says whose lease ran out while its
// holder was stopped, and who took the lock meanwhile.
func TestRace_twoRoundsOnLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("the race builds holder programs and runs two rounds: not with -short")
	}
	r, _ := openRoom(t)
	if err := r.StartRace(t.Context(), 6*time.Second, HouseLocks); err != nil {
		testenv.Missing(t, fmt.Errorf("the race's servers: %w", err))
	}
	runRacers(t, r, map[string]string{"ana": "lock", "bob": "mutant:release-get-del"})

	one, err := r.RunRound(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	for lock, lost := range map[string]bool{"house-lock": true, "house-mutant": true, "house-fenced": false, "ana": false, "bob": false} {
		got := row(one, lock)
		if got.Lost != lost || lost && !strings.Contains(got.Verdict, "was stopped for 1.5s") {
			t.Errorf("round 1, %s: lost %v (%s; %s), want lost %v, told by its stopped spender", lock, got.Lost, got.Check, got.Verdict, lost)
		}
	}

	two, err := r.RunRound(t.Context(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if !two.Lost || !strings.Contains(strings.Join(two.Story, "\n"), "was stopped; ") {
		t.Errorf("round 2: the one wallet %s, story:\n%s\nwant money lost, and a stopped holder's lease taken", two.Check, strings.Join(two.Story, "\n"))
	}
	p, _ := page(t, r)
	for _, want := range []string{"Round 1: side by side", "Round 2: one wallet, one lock key", "The race is over.", "house-fenced"} {
		if !strings.Contains(p, want) {
			t.Errorf("the page does not say %q", want)
		}
	}
}

// A lost spend is two that landed, computed from one balance: the one
// written last is told, with its stop, or its own pause past the lease.
func TestLostSpend(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ok := []spend{{spender: 1, read: 100, wrote: 90, readAt: ms(10), wroteAt: ms(20)}, {spender: 2, read: 90, wrote: 80, readAt: ms(30), wroteAt: ms(40)}}
	if got := lostSpend(ok); got != "" {
		t.Errorf("no spend lost, but: %s", got)
	}
	stopped := append(ok, spend{spender: 3, read: 90, wrote: 80, gotAt: ms(25), readAt: ms(28), wroteAt: ms(1600), stopped: true})
	want := "spender 3 read 90 at 0.0 s, was stopped for 1.5s, past its lease of 500ms, and wrote 80 at 1.6 s; spender 2 had taken the lock and written 80 at 0.0 s in between, so spender 3 wrote over it: a spend lost"
	if got := lostSpend(stopped); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	slow := append(ok, spend{spender: 3, read: 90, wrote: 80, gotAt: ms(25), readAt: ms(900), wroteAt: ms(910)})
	if got := lostSpend(slow); !strings.Contains(got, "spender 3 read 90 at 0.9 s (0.9 s after it got the lock, past its lease of 500ms)") {
		t.Errorf("got %s", got)
	}
}
