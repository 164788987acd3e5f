package harness

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAgain_triesUntilItWorksOrTimeIsUp(t *testing.T) {
	calls := 0
	err := again(t.Context(), func(context.Context) error {
		if calls++; calls < 3 {
			return errors.New("connection refused")
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("again = %v after %d calls, want nil after 3", err, calls)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 250*time.Millisecond)
	defer cancel()
	calls = 0
	if err := again(ctx, func(context.Context) error { calls++; return errors.New("down") }); err == nil || calls < 2 {
		t.Errorf("again = %v after %d calls, want the last error after a few", err, calls)
	}
}

func TestDefaultWallet_theArticlesWalletUnderTheDefaultPrefixAndApartUnderOthers(t *testing.T) {
	const def = "walletlock:demo:step5:"
	if got := DefaultWallet(def, def); got != 42 {
		t.Errorf("DefaultWallet(default) = %d, want the article's 42", got)
	}
	a, b := DefaultWallet("walletlock:test:a:", def), DefaultWallet("walletlock:test:b:", def)
	if a == b || a < 10_000 || a >= 1_000_000 || b < 10_000 || b >= 1_000_000 {
		t.Errorf("DefaultWallet of two prefixes = %d and %d, want two ids from 10,000 to 999,999, apart", a, b)
	}
}
