package harness

// -wallet-id: the wallet row a row program (step 5, internal/fencing)
// uses, and the one each prefix gets when none is given.

import (
	"flag"
	"hash/fnv"

	"example.com/walletlock/lab/wallet"
)

// WithWallet adds -wallet-id: the PostgreSQL wallet row the run uses, and
// deletes at the end.
func (p *Program) WithWallet() *Program {
	p.walletID = p.Flags.Int64("wallet-id", wallet.DemoWallet, "PostgreSQL wallet this run uses, and deletes at the end; when not given, 42 under the default -prefix and a number derived from any other")
	return p
}

// WalletID is -wallet-id when given, and DefaultWallet otherwise.
func (p *Program) WalletID() int64 {
	given := false
	p.Flags.Visit(func(f *flag.Flag) { given = given || f.Name == "wallet-id" })
	if given {
		return *p.walletID
	}
	return DefaultWallet(p.Prefix(), p.defaultPrefix)
}

// DefaultWallet is the wallet a run on prefix uses when not told one: the
// article's 42 under the program's default prefix, and under any other a
// number derived from the prefix, so that runs on different prefixes use
// different rows. (Ids from 10,000 to 999,999: below step 6's default
// range, far below the tests'.)
func DefaultWallet(prefix, defaultPrefix string) int64 {
	if prefix == defaultPrefix {
		return wallet.DemoWallet
	}
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return 10_000 + int64(h.Sum64()%990_000)
}
