package wallet

import (
	"errors"
	"fmt"
)

// Errors the Store (wallet/postgres) returns besides those of the database (wrapped, with a
// "wallet:" prefix). A missing row is ErrNoWallet, as in Spend.
var (
	// ErrStaleFence means PostgreSQL refused a fenced claim or write because a
	// newer fence holds the wallet. The error is a *StaleFenceError.
	ErrStaleFence = errors.New("wallet: stale fence")
	// ErrBadFence means a fence below 1: fences come from a counter that
	// starts at 1, and 0 is what an unclaimed row holds.
	ErrBadFence = errors.New("wallet: fence must be at least 1")
	// ErrOwned means a wallet row belongs to another run (another owner,
	// see Store.Owned): the Store neither resets nor deletes it. The error
	// is an *OwnedError.
	ErrOwned = errors.New("wallet: owned by another run")
)

// OwnedError is the error of a reset that found a row of another run. It
// matches ErrOwned with errors.Is.
type OwnedError struct {
	ID    int64  // the first wallet in the range that another run owns
	Owner string // that run's owner name (a key prefix)
}

func (e *OwnedError) Error() string {
	return fmt.Sprintf("wallet: wallet %d in PostgreSQL belongs to the run with prefix %q: choose other wallet ids, or let that run end (it deletes its rows)", e.ID, e.Owner)
}

// Unwrap makes errors.Is(err, ErrOwned) true.
func (e *OwnedError) Unwrap() error { return ErrOwned }

// StaleFenceError is the error of a refused fenced claim or write. It matches
// ErrStaleFence with errors.Is.
//
// Highest is the fence PostgreSQL holds for the wallet, read right after the
// refusal. When it is above every fence the lock has handed out, the lock's
// counter went backwards (Redis restarted without its data): raise the
// counter to at least Highest and acquire again. The Store never retries on
// its own, because only the lock holder can get a newer fence.
type StaleFenceError struct {
	ID      int64 // the wallet
	Fence   int64 // the fence that was refused
	Highest int64 // the fence the row carries
}

func (e *StaleFenceError) Error() string {
	return fmt.Sprintf("wallet: stale fence: wallet %d refused fence %d, PostgreSQL holds fence %d", e.ID, e.Fence, e.Highest)
}

// Unwrap makes errors.Is(err, ErrStaleFence) true.
func (e *StaleFenceError) Unwrap() error { return ErrStaleFence }
