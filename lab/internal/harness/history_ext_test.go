package harness_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/testenv"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// A recorded spend keeps the balance it read and how it ended: the page
// -history writes shows both.
func TestHistory_spendRecordsWhatItReadAndHowItEnded(t *testing.T) {
	rdb := testenv.Redis(t)
	prefix := testenv.Prefix(t, rdb)
	key := wallet.BalanceKey(prefix, wallet.DemoWallet)
	ctx := testenv.Context(t, 10*time.Second)
	if err := wallet.Set(ctx, rdb, key, 15); err != nil {
		t.Fatal(err)
	}
	rec := history.NewRecorder(0)
	rec.Set(wallet.DemoWallet, 15)
	for i := range 2 {
		if _, err := rec.Spend(ctx, wallet.DemoWallet, i, 10, func(ctx context.Context) (bool, error) { return wallet.Spend(ctx, rdb, key, 10, 0) }); err != nil {
			t.Fatal(err)
		}
	}
	bal, err := wallet.Balance(ctx, rdb, key)
	if err != nil {
		t.Fatal(err)
	}
	l := harness.CheckHistory(ctx, rec, wallet.DemoWallet, wallet.Check(15, 10, 1, bal))
	if l.Linearizable != history.Yes || l.Ops != 2 || l.Dropped != 0 {
		t.Errorf("got %+v, want a linearizable history of 2 spends", l.Verdict)
	}
	path := filepath.Join(t.TempDir(), "h.html")
	p := harness.New("step2-lock", prefix, &strings.Builder{}, &strings.Builder{})
	if code, ok := p.Parse([]string{"-prefix", prefix, "-history", path}, nil, nil); !ok {
		t.Fatalf("Parse = %d", code)
	}
	p.Keep("lock", l)
	if code := p.Finish(ctx, harness.NewReport("step2-lock")); code != 0 {
		t.Fatalf("Finish = %d", code)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"spend 10, read 15 \\u2192 accepted", "spend 10, read 5 \\u2192 refused for funds", "set 15", "read \\u2192 5"} {
		if !strings.Contains(string(page), want) && !strings.Contains(string(page), strings.ReplaceAll(want, "\\u2192", "→")) {
			t.Errorf("the page does not show %q", want)
		}
	}
}
