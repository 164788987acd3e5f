package harness

import (
	"errors"
	"fmt"
	"strings"

	"example.com/walletlock/lab/wallet"
)

// Outcomes sums up, in one line, the spends of a wallet.Hammer run of n
// that neither went through nor were refused, or returns "" when there
// were none:
//
//	1 of 50 spends failed; 2 of 50 had an unknown outcome (sent, no reply) and the balance says 1 of them landed; first error: ...
//
// v is the verdict on the run, from wallet.CheckUnknown.
func Outcomes(t wallet.Tally, n int, v wallet.Verdict) string {
	if len(t.Errors) == 0 {
		return ""
	}
	var parts []string
	if failed := len(t.Errors) - t.Unknown; failed > 0 {
		parts = append(parts, fmt.Sprintf("%d of %d spends failed", failed, n))
	}
	if t.Unknown > 0 {
		landed := fmt.Sprintf("the balance says %d of them landed", v.Landed)
		if v.Landed < 0 {
			landed = "no number of them landing explains the balance"
		}
		parts = append(parts, fmt.Sprintf("%d of %d spends had an unknown outcome (sent, no reply) and %s", t.Unknown, n, landed))
	}
	return fmt.Sprintf("%s; first error: %v", strings.Join(parts, "; "), t.Errors[0])
}

// Counted is one spend as a tally counts it: accepted when it went
// through, unknown when its write got no reply (wallet.ErrUnknownOutcome).
func Counted(ok bool, err error) (accepted, unknown int) {
	switch {
	case ok:
		return 1, 0
	case errors.Is(err, wallet.ErrUnknownOutcome):
		return 0, 1
	}
	return 0, 0
}

// Failed returns an error naming how many of a tally's n spends failed,
// with the first failure, or nil when every spend went through, was
// refused for funds or had an unknown outcome (wallet.ErrUnknownOutcome).
func Failed(t wallet.Tally, n int) error {
	for _, err := range t.Errors {
		if !errors.Is(err, wallet.ErrUnknownOutcome) {
			return fmt.Errorf("%d of %d spends failed, first: %w", len(t.Errors)-t.Unknown, n, err)
		}
	}
	return nil
}
