package harness

import "testing"

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
