package main

import (
	"encoding/json"
	"testing"

	"example.com/walletlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Every retry strategy keeps the balance right; the table says what each
// cost, once per strategy.
func TestStep4_everyStrategyOK(t *testing.T) {
	rdb := testenv.Redis(t)
	ran := testenv.Run(t, "-prefix", testenv.Prefix(t, rdb), "-json")
	var doc struct {
		Phases     []struct{ Phase, Verdict, Want string }
		Strategies []struct {
			Strategy string
			Retries  int64
			Seconds  float64
		}
	}
	if err := json.Unmarshal([]byte(ran.Stdout), &doc); err != nil || ran.Code != 0 {
		t.Fatalf("exit %d, %v:\n%s\n%s", ran.Code, err, ran.Stdout, ran.Stderr)
	}
	want := []string{"lockstep", "exponential", "jitter"}
	if len(doc.Phases) != 3 || len(doc.Strategies) != 3 {
		t.Fatalf("phases %+v, strategies %+v; want one each of %v", doc.Phases, doc.Strategies, want)
	}
	for i, p := range doc.Phases {
		if p.Phase != want[i] || p.Verdict != "OK" || p.Want != "OK" || doc.Strategies[i].Strategy != want[i] || doc.Strategies[i].Seconds <= 0 {
			t.Errorf("%s: phase %+v, row %+v", want[i], p, doc.Strategies[i])
		}
	}
}
