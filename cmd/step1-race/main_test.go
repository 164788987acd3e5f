package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var checkLine = regexp.MustCompile(`^accepted=(\d+) balance=(\d+) expected=(-?\d+) (OK|BROKEN)$`)

// Without a lock the spends lose updates on every run, and the program
// exits 0: BROKEN is what the lesson promises here.
func TestStep1_brokenOnEveryRun(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	for run := range 5 {
		ran := testenv.Run(t, "-prefix", prefix)
		line := strings.TrimSpace(ran.Stdout)
		m := checkLine.FindStringSubmatch(line)
		if ran.Code != 0 || m == nil || m[4] != "BROKEN" || ran.Stderr != "" {
			t.Fatalf("run %d: exit %d, printed %q, stderr %q; want a BROKEN check line and exit 0", run, ran.Code, line, ran.Stderr)
		}
		if n := rdb.Exists(t.Context(), prefix+"wallet:42:balance", prefix+"walletlock:run").Val(); n != 0 {
			t.Fatalf("run %d left %d keys behind", run, n)
		}
	}
}

// -json is one document: the phase, its check line, the verdict and what
// the lesson wants.
func TestStep1_json(t *testing.T) {
	rdb := testenv.Redis(t)
	ran := testenv.Run(t, "-prefix", testenv.Prefix(t, rdb), "-json")
	var doc struct {
		Step   string
		Phases []struct{ Step, Phase, Check, Verdict, Want string }
	}
	if err := json.Unmarshal([]byte(ran.Stdout), &doc); err != nil || ran.Code != 0 {
		t.Fatalf("exit %d, %v:\n%s", ran.Code, err, ran.Stdout)
	}
	if len(doc.Phases) != 1 || doc.Phases[0].Phase != "race" || doc.Phases[0].Verdict != "BROKEN" || doc.Phases[0].Want != "BROKEN" || !checkLine.MatchString(doc.Phases[0].Check) {
		t.Errorf("phases = %+v", doc.Phases)
	}
}
