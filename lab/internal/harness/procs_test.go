package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"example.com/walletlock/lab/wallet"
)

func TestCheck(t *testing.T) {
	for _, tt := range []struct {
		procs, n int
		ok       bool
	}{
		{1, 1, true},
		{4, 50, true},
		{MaxProcs, MaxProcs, true},
		{0, 50, false},
		{-1, 50, false},
		{MaxProcs + 1, 10_000, false},
		{5, 4, false},
	} {
		err := CheckProcs(tt.procs, tt.n)
		if (err == nil) != tt.ok {
			t.Errorf("CheckProcs(%d, %d) = %v, want ok %v", tt.procs, tt.n, err, tt.ok)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "-procs ") {
			t.Errorf("CheckProcs(%d, %d) = %q, want it to name -procs first", tt.procs, tt.n, err)
		}
	}
}

// spendEvenly accepts the spends of even spenders, refuses odd ones, and
// fails the third with an unknown outcome.
func spendEvenly(spent *atomic.Int32) func(context.Context, int) (bool, error) {
	return func(_ context.Context, i int) (bool, error) {
		spent.Add(1)
		if i == 3 {
			return false, wallet.WriteError("k", errors.New("i/o timeout"))
		}
		return i%2 == 0, nil
	}
}

// A copy says it is ready, spends only after the start line, and sends
// its tally as one JSON line, which the parent counts back.
func TestServe_readyThenTally(t *testing.T) {
	var spent atomic.Int32
	var also Errors
	sp := spenders{Spend: spendEvenly(&spent), Also: &also}
	also.Add(errors.New("lock: not held"))
	var stdout, stderr bytes.Buffer
	if code := sp.serve(t.Context(), strings.NewReader("go\n"), &stdout, &stderr, "6"); code != 0 {
		t.Fatalf("serve = %d, want 0; stderr: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSuffix(stdout.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] != `{"ready":true}` {
		t.Fatalf("stdout = %q, want the ready line and the tally", stdout.String())
	}
	var r copyTally
	if err := json.Unmarshal([]byte(lines[1]), &r); err != nil {
		t.Fatal(err)
	}
	var got wallet.Tally
	var gotAlso Errors
	r.add(&got, &gotAlso)
	if got.Accepted != 3 || got.Refused != 2 || got.Unknown != 1 || len(got.Errors) != 1 || len(gotAlso.List()) != 1 {
		t.Errorf("tally %+v, also %v; want 3 accepted, 2 refused, 1 unknown (its error kept), 1 other error", got, gotAlso.List())
	}
}

// A copy whose parent goes away before the start spends nothing.
func TestServe_noStartLine(t *testing.T) {
	var spent atomic.Int32
	var stdout, stderr bytes.Buffer
	if code := (spenders{Spend: spendEvenly(&spent)}).serve(t.Context(), strings.NewReader(""), &stdout, &stderr, "6"); code != 1 {
		t.Errorf("serve = %d, want 1", code)
	}
	if spent.Load() != 0 {
		t.Errorf("%d spends without the start line, want none", spent.Load())
	}
}

func TestServe_badShare(t *testing.T) {
	var spent atomic.Int32
	var stdout, stderr bytes.Buffer
	if code := (spenders{Spend: spendEvenly(&spent)}).serve(t.Context(), strings.NewReader("go\n"), &stdout, &stderr, "lots"); code != 2 {
		t.Errorf("serve = %d, want 2", code)
	}
	if spent.Load() != 0 || stdout.Len() > 0 || !strings.Contains(stderr.String(), procsEnv) {
		t.Errorf("spent %d, stdout %q, stderr %q; want nothing spent or written, and a line naming %s", spent.Load(), stdout.String(), stderr.String(), procsEnv)
	}
}
