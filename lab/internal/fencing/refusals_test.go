package fencing_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/fencing"
	"example.com/walletlock/lab/wallet"
)

// Count sorts refusals out: a stalled spender's, one with a fence handed
// out twice (the counter went backwards), and the others; unknown
// outcomes are not refusals, and any other error is returned.
func TestCountRefusals_sortsRefusalsByWhy(t *testing.T) {
	stale := func(fence int64) error { return &wallet.StaleFenceError{ID: 1, Fence: fence, Highest: 9} }
	unknown := fmt.Errorf("write: %w", wallet.ErrUnknownOutcome)
	fences := []int64{1, 2, 3, 3, 4, 5}
	errs := []error{nil, stale(2), stale(3), nil, stale(4), unknown}
	stalled := []bool{false, true, false, false, false, false}
	tally := wallet.Tally{Accepted: 2, Unknown: 1, Errors: []error{stale(2), stale(3), stale(4), unknown}}
	r, err := fencing.CountRefusals(60, tally, fences, errs, stalled)
	if err != nil {
		t.Fatal(err)
	}
	if r.Spenders != 6 || r.Initial != 60 || r.Stalled != 1 || r.StaleRefused != 3 || r.StalledStale != 1 || r.Backwards != 1 || r.Unknown != 1 || !slices.Equal(r.RefusedFences, []int64{2, 3, 4}) {
		t.Errorf("Count = %+v", r)
	}
	lines := strings.Join(r.Lines(), "\n")
	for _, want := range []string{"stale writes refused: 3, fences [2 3 4]", "counter went backwards", "other spenders refused without a stall"} {
		if !strings.Contains(lines, want) {
			t.Errorf("lines do not say %q:\n%s", want, lines)
		}
	}

	broken := errors.New("connection refused")
	if _, err := fencing.CountRefusals(60, wallet.Tally{Errors: []error{broken}}, []int64{1}, []error{broken}, []bool{false}); !errors.Is(err, broken) {
		t.Errorf("Count with a failed spend = %v, want it returned", err)
	}
}
