package harness

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// raced records n spends that all read 100, as in step 1.
func raced(rec *history.Recorder, n int) {
	for i := range n {
		rec.Add(history.Op{Wallet: wallet.DemoWallet, Client: i, Call: history.Now(), Return: history.Now() + 1000, Amount: 10, Read: 100, Result: history.Accepted})
	}
}

func started(initial int64) *history.Recorder {
	rec := history.NewRecorder(0)
	rec.Set(wallet.DemoWallet, initial)
	return rec
}

func TestCheckHistory_aBrokenBalanceIsNotLinearizable(t *testing.T) {
	rec := started(100)
	raced(rec, 50)
	l := CheckHistory(t.Context(), rec, wallet.DemoWallet, wallet.Check(100, 10, 50, 90))
	if l.Linearizable != history.No || !strings.Contains(l.Why, "no order of its spends leaves the balance read back (90)") {
		t.Errorf("got %+v, want no: fifty spends that all read 100", l.Verdict)
	}
	if got := CheckLine(wallet.Check(100, 10, 50, 90), l); got != "accepted=50 balance=90 expected=-400 BROKEN linearizable=no" {
		t.Errorf("check line %q", got)
	}
}

func TestCheckHistory_withHolesIsUnknownNeverYes(t *testing.T) {
	rec := started(100)
	raced(rec, 1)
	rec.Lose(3) // a -procs copy that sent none of its spends
	if l := CheckHistory(t.Context(), rec, wallet.DemoWallet, wallet.Check(100, 10, 1, 90)); l.Linearizable != history.Unsure || l.Dropped != 3 {
		t.Errorf("got %+v, want unknown with 3 missing", l.Verdict)
	}
	if l := CheckHistory(t.Context(), nil, wallet.DemoWallet, wallet.Check(100, 10, 1, 90)); l != nil || CheckLine(wallet.Check(100, 10, 1, 90), l) != "accepted=1 balance=90 expected=90 OK" {
		t.Errorf("no history: got %+v, want no verdict and the bare check line", l)
	}
}

// After Ctrl-C the check stops before it begins: unknown, and why.
func TestCheckHistory_afterCtrlCIsUnknown(t *testing.T) {
	rec := started(100)
	raced(rec, 1)
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(signalError{syscall.SIGTERM})
	l := CheckHistory(ctx, rec, wallet.DemoWallet, wallet.Check(100, 10, 1, 90))
	if l.Linearizable != history.Unsure || !strings.Contains(l.Why, "stopped (SIGTERM)") {
		t.Errorf("got %+v, want unknown, stopped by SIGTERM", l.Verdict)
	}
}

// A phase whose balance gives the lesson's verdict but whose history does
// not (a stale read behind a correct lock) makes the program exit 1; the
// phase's JSON carries the history keys.
func TestFinish_holdsTheHistoryToTheLesson(t *testing.T) {
	ok := wallet.Check(100, 10, 10, 0)
	r := NewReport("step2-lock")
	r.AddChecked("lock", ok, &Linearizability{Verdict: history.Verdict{Linearizable: history.No, Why: "wallet 42: no order of its 52 operations explains what they returned", Ops: 50}}, nil)
	code, stdout, stderr := finish(t, r, true)
	if code != 1 || !strings.Contains(stderr, "phase lock: linearizable=no, the lesson says yes") {
		t.Errorf("Finish = %d, stderr %q; want 1 and the history's miss named", code, stderr)
	}
	var got struct {
		Phases []map[string]any `json:"phases"`
	}
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || len(got.Phases) != 1 {
		t.Fatalf("stdout %s (%v)", stdout, err)
	}
	for _, key := range []string{"check", "linearizable", "linearizable_why", "history_ops", "history_dropped", "history_check_seconds"} {
		if _, there := got.Phases[0][key]; !there {
			t.Errorf("phase JSON has no %q: %v", key, got.Phases[0])
		}
	}
	if got.Phases[0]["check"] != ok.String() {
		t.Errorf("check = %v, want the balance check alone, %q", got.Phases[0]["check"], ok.String())
	}

	r = NewReport("step2-lock")
	r.AddChecked("lock", ok, &Linearizability{Verdict: history.Verdict{Linearizable: history.Unsure, Why: "out of time"}}, nil)
	if code, _, stderr := finish(t, r, false); code != 0 || stderr != "" {
		t.Errorf("unknown: Finish = %d, stderr %q; want 0: an unfinished check proves nothing", code, stderr)
	}
}

func TestProgram_writesTheHistoryPage(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.html")
	p := New("step1-race", "test:", &strings.Builder{}, &strings.Builder{})
	if code, ok := p.Parse([]string{"-history", path}, nil, nil); !ok {
		t.Fatalf("Parse = %d", code)
	}
	rec := started(100)
	raced(rec, 50)
	p.Keep("race", CheckHistory(t.Context(), rec, wallet.DemoWallet, wallet.Check(100, 10, 50, 90)))
	r := NewReport("step1-race")
	if code := p.Finish(t.Context(), r); code != 0 {
		t.Fatalf("Finish = %d", code)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(b), "step1-race race") {
		t.Errorf("the page (%v) does not name the phase", err)
	}
	if code, ok := New("step1-race", "test:", &strings.Builder{}, &strings.Builder{}).Parse([]string{"-history", filepath.Join(t.TempDir(), "no", "h.html")}, nil, nil); ok || code != 2 {
		t.Errorf("-history in a missing folder: Parse = %d, %v; want 2", code, ok)
	}
}
