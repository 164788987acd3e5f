package main

import (
	"encoding/json"
	"testing"

	"example.com/walletlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Under load only none loses money; every strategy has its row.
func TestStep6_onlyNoneIsBroken(t *testing.T) {
	rdb := testenv.Redis(t)
	testenv.Postgres(t)
	ran := testenv.Run(t, "-prefix", testenv.Prefix(t, rdb), "-json", "-duration", "300ms")
	var doc struct {
		Phases     []struct{ Phase, Check, Verdict, Want string }
		Strategies []struct {
			Strategy  string
			PerSecond float64 `json:"accepted_per_second"`
			Verdict   string
		}
	}
	if err := json.Unmarshal([]byte(ran.Stdout), &doc); err != nil || ran.Code != 0 {
		t.Fatalf("exit %d, %v:\n%s\n%s", ran.Code, err, ran.Stdout, ran.Stderr)
	}
	want := []string{"none", "lock", "redislock", "fenced", "version", "atomic", "forupdate"}
	if len(doc.Phases) != len(want) || len(doc.Strategies) != len(want) {
		t.Fatalf("phases %+v; want %v", doc.Phases, want)
	}
	for i, p := range doc.Phases {
		verdict := map[bool]string{true: "BROKEN", false: "OK"}[p.Phase == "none"]
		if p.Phase != want[i] || p.Verdict != verdict || p.Want != verdict || doc.Strategies[i].Verdict != verdict || doc.Strategies[i].PerSecond <= 0 {
			t.Errorf("%s: phase %+v, row %+v", want[i], p, doc.Strategies[i])
		}
	}
}
