package history

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// spend is an operation of wallet 1 from call to ret.
func spend(client int, call, ret, amount, read int64, r Result) Op {
	return Op{Wallet: 1, Client: client, Call: call, Return: ret, Amount: amount, Read: read, Result: r}
}

// recorded is a Recorder that holds ops.
func recorded(ops []Op) *Recorder {
	r := NewRecorder(0)
	for _, op := range ops {
		r.Add(op)
	}
	return r
}

func set(balance int64) Op { return Op{Wallet: 1, Call: 0, Return: 1, Read: balance, Result: Set} }

func read(at, balance int64) Op {
	return Op{Wallet: 1, Call: at, Return: at, Read: balance, Result: Read}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name string
		ops  []Op
		want Answer
	}{
		{"spends one after another are linearizable", []Op{
			set(100), spend(0, 10, 20, 10, 100, Accepted), spend(1, 30, 40, 10, 90, Accepted), read(50, 80),
		}, Yes},
		{"two overlapping spends that both read 100 are not: one update is lost", []Op{
			set(100), spend(0, 10, 40, 10, 100, Accepted), spend(1, 20, 50, 10, 100, Accepted),
		}, No},
		{"a read-back the accepted spends do not explain is not", []Op{
			set(100), spend(0, 10, 20, 10, NoRead, Accepted), spend(1, 15, 25, 10, NoRead, Accepted), read(30, 90),
		}, No},
		{"a spend refused for funds while the wallet held the money is not", []Op{
			set(100), spend(0, 10, 20, 10, 0, RefusedFunds), read(30, 100),
		}, No},
		{"a refusal with no read known is not either, when the money was there", []Op{
			set(100), spend(0, 10, 20, 10, NoRead, RefusedFunds),
		}, No},
		{"a refusal when the money ran out is linearizable", []Op{
			set(10), spend(0, 10, 20, 10, 10, Accepted), spend(1, 30, 40, 10, 0, RefusedFunds), read(50, 0),
		}, Yes},
		{"an unknown outcome that landed is linearizable", []Op{
			set(100), spend(0, 10, 20, 10, NoRead, Unknown), read(30, 90),
		}, Yes},
		{"an unknown outcome that did not land is linearizable", []Op{
			set(100), spend(0, 10, 20, 10, NoRead, Unknown), read(30, 100),
		}, Yes},
		{"an unknown outcome may land after the read-back: its return is open", []Op{
			set(100), spend(0, 10, 20, 10, 100, Unknown), read(30, 100), spend(1, 40, 50, 10, 100, Accepted), read(60, 90),
		}, Yes},
		{"a failed spend is left out", []Op{
			set(100), spend(0, 10, 20, 10, 55, Failed), read(30, 100),
		}, Yes},
		{"a spend refused as stale changes nothing", []Op{
			set(100), spend(0, 10, 20, 10, NoRead, RefusedStale), read(30, 100),
		}, Yes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Check(t.Context(), tt.ops, DefaultLimits)
			if v.Linearizable != tt.want {
				t.Errorf("got %s (%s), want %s", v, v.Why, tt.want)
			}
		})
	}
}

func TestCheck_wallets(t *testing.T) {
	// Wallet 2's lost update makes the whole history a No, and names it.
	ops := []Op{set(100), spend(0, 10, 20, 10, 100, Accepted)}
	for _, op := range []Op{set(50), spend(1, 10, 40, 10, 50, Accepted), spend(2, 20, 50, 10, 50, Accepted)} {
		op.Wallet = 2
		ops = append(ops, op)
	}
	v := Check(t.Context(), ops, DefaultLimits)
	if v.Linearizable != No || v.Wallet != 2 || !strings.Contains(v.Why, "wallet 2") {
		t.Errorf("got %s, wallet %d (%s); want no, wallet 2", v, v.Wallet, v.Why)
	}
}

func TestCheck_limitsGiveUnknownNeverYes(t *testing.T) {
	ops := []Op{set(100), spend(0, 10, 20, 10, 100, Accepted), spend(1, 30, 40, 10, 90, Accepted)}
	for _, lim := range []Limits{{Ops: 1}, {WalletOps: 2}, {Timeout: time.Nanosecond}} {
		t.Run(fmt.Sprintf("%+v", lim), func(t *testing.T) {
			if v := Check(t.Context(), ops, lim); v.Linearizable != Unsure || v.Why == "" {
				t.Errorf("got %s (%q), want unknown with a reason", v, v.Why)
			}
		})
	}
}

func TestRecorder_keepsAtMostItsCap(t *testing.T) {
	l := NewRecorder(3)
	for i := range 5 {
		l.Add(spend(0, int64(i), int64(i), 10, NoRead, Accepted))
	}
	if l.Len() != 3 || l.Dropped() != 2 || len(l.Ops()) != 3 {
		t.Fatalf("got %d kept, %d dropped; want 3 and 2", l.Len(), l.Dropped())
	}
	if v := l.Check(t.Context(), DefaultLimits); v.Linearizable != Unsure || !strings.Contains(v.Why, "missing 2") {
		t.Errorf("a log with holes: got %s (%s), want unknown", v, v.Why)
	}
}

// TestNow_isTheWallClock: Now and At give Unix nanoseconds, so that two
// processes on one machine time their operations on one clock.
func TestNow_isTheWallClock(t *testing.T) {
	before := time.Now()
	now := Now()
	after := time.Now()
	const slack = int64(time.Second) // the wall clock may be slewed since the process started
	if now < before.UnixNano()-slack || now > after.UnixNano()+slack {
		t.Errorf("Now() = %d, want about %d (Unix ns)", now, before.UnixNano())
	}
	if at := At(after); at < now {
		t.Errorf("At(a later time) = %d, before Now() = %d", at, now)
	}
}

func TestRecorder_growsInChunks(t *testing.T) {
	l := NewRecorder(0)
	n := 3*chunk + 5
	for i := range n {
		l.Add(Op{Call: int64(i)})
	}
	ops := l.Ops()
	if len(ops) != n || ops[n-1].Call != int64(n-1) || ops[chunk].Call != chunk {
		t.Fatalf("got %d operations, want %d in order", len(ops), n)
	}
}

func TestOutcome(t *testing.T) {
	unknown := fmt.Errorf("write: %w", wallet.ErrUnknownOutcome)
	stale := fmt.Errorf("fenced: %w", ledger.ErrStaleFence)
	for _, tt := range []struct {
		ok   bool
		err  error
		want Result
	}{
		{true, nil, Accepted}, {true, errors.New("release failed"), Accepted}, {false, nil, RefusedFunds},
		{false, unknown, Unknown}, {false, stale, RefusedStale}, {false, errors.New("no lock"), Failed},
	} {
		if got := Outcome(tt.ok, tt.err); got != tt.want {
			t.Errorf("Outcome(%v, %v) = %s, want %s", tt.ok, tt.err, got, tt.want)
		}
	}
}

func TestWritePage(t *testing.T) {
	// A long history: 1,000 spends one after another, and a lost update
	// near the end, which the page's window must hold.
	ops := []Op{set(1_000_000)}
	bal, at := int64(1_000_000), int64(10)
	for i := range 1000 {
		ops = append(ops, spend(i%4, at, at+5, 10, bal, Accepted))
		bal, at = bal-10, at+10
	}
	ops = append(ops, spend(0, at, at+30, 10, bal, Accepted), spend(1, at+10, at+40, 10, bal, Accepted))
	v := Check(t.Context(), ops, DefaultLimits)
	if v.Linearizable != No {
		t.Fatalf("got %s, want no", v)
	}
	b := newBudget(t.Context(), PageLimits, time.Now())
	w := window(b, ops, v)
	if len(w) > 4*PageOps+10 || !refuted(b, w) {
		t.Errorf("the window has %d operations and no order refuted=%v; want at most about %d, and the lost update", len(w), refuted(b, w), PageOps)
	}
	var page strings.Builder
	lock := Check(t.Context(), ops[:500], DefaultLimits)
	if err := WritePage(t.Context(), &page, []Section{{Label: "none", History: recorded(ops), Verdict: v}, {Label: "lock", History: recorded(ops[:500]), Verdict: lock}}, PageLimits); err != nil {
		t.Fatal(err)
	}
	got := page.String()
	for _, want := range []string{"<html", "none, wallet 1 (linearizable=no)", "lock, wallet 1 (linearizable=yes)"} {
		if !strings.Contains(got, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(got, "<script src=") || strings.Contains(got, `<link rel="stylesheet" href="http`) {
		t.Error("the page loads something from the network")
	}
}

// BenchmarkRecorder_Add is what recording costs a spend (a load-test
// spend takes a millisecond or more), with as many goroutines as the load
// test has workers.
func BenchmarkRecorder_Add(b *testing.B) {
	l := NewRecorder(b.N + 1)
	b.SetParallelism(32) // 64 goroutines on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			l.Add(Op{Wallet: 1, Call: Now(), Return: Now(), Amount: 10, Read: 100, Result: Accepted})
		}
	})
}

// BenchmarkRecorder_Spend is what recording adds to one spend: the clock
// read twice, a context that carries the read's observer, a mutex and a
// copy into the recorder. A spend is a round trip or more (some 100 µs on
// loopback); this is well under 1 % of that.
func BenchmarkRecorder_Spend(b *testing.B) {
	r := NewRecorder(b.N + 1)
	ctx := b.Context()
	spend := func(context.Context) (bool, error) { return true, nil }
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r.Spend(ctx, 1, 0, 10, spend)
		}
	})
}

// The arithmetic that answers No without a search must never refuse a
// history porcupine's search accepts: on small random histories of
// overlapping spends, refused, accepted, unknown and failed, every No it
// gives, the search gives too.
func TestCheck_arithmeticAgreesWithTheSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 11))
	results := []Result{Accepted, Accepted, Accepted, RefusedFunds, Unknown, Failed}
	refused := 0
	for range 3000 {
		ops := []Op{set(40)}
		for i := range 1 + rng.IntN(6) {
			call := int64(10 + rng.IntN(40))
			saw := NoRead
			if rng.IntN(2) == 0 {
				saw = int64(10 * rng.IntN(5))
			}
			ops = append(ops, spend(i, call, call+1+int64(rng.IntN(30)), 10, saw, results[rng.IntN(len(results))]))
		}
		ops = append(ops, read(100, int64(10*rng.IntN(5))))
		why := arithmetic(byWallet(ops)[1])
		if why == "" {
			continue
		}
		refused++
		if got := porcupine.CheckOperations(Model, operations(ops)); got {
			t.Fatalf("the arithmetic says %q of a history the search accepts: %+v", why, ops)
		}
	}
	t.Logf("the arithmetic refused %d of 3000 histories, each refused by the search too", refused)
}

func TestRecorder_keepsSetsAndReadsPastItsCap(t *testing.T) {
	r := NewRecorder(1)
	r.Set(1, 100)
	r.Add(spend(0, 10, 20, 10, 100, Accepted))
	r.Add(spend(1, 30, 40, 10, 90, Accepted)) // past the cap: dropped
	r.Read(1, 80)
	if got := r.Ops(); len(got) != 3 || got[1].Result != Set || got[2].Result != Read || r.Dropped() != 1 {
		t.Errorf("got %+v, %d dropped; want the spend kept, the Set and the Read, 1 dropped", got, r.Dropped())
	}
	var none *Recorder
	none.Add(set(1))
	if ok, err := none.Spend(t.Context(), 1, 0, 10, func(context.Context) (bool, error) { return true, nil }); !ok || err != nil || none.Len() != 0 || none.Ops() != nil {
		t.Errorf("a nil Recorder: Spend = %v, %v; it must spend and record nothing", ok, err)
	}
}
