package fencing

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"example.com/walletlock/lab/wallet"
)

// Refusals counts which of a crowd of fenced spends PostgreSQL refused,
// and why, as step 5's phase 3 prints them (its -json "figures").
type Refusals struct {
	Spenders      int     `json:"spenders"`
	Initial       int64   `json:"initial"`
	Stalled       int     `json:"stalled"`
	StaleRefused  int     `json:"stale_refused"`  // spends PostgreSQL refused for an old fence
	StalledStale  int     `json:"stalled_stale"`  // of which stalled spenders
	RefusedFences []int64 `json:"refused_fences"` // their fences
	HighestFence  int64   `json:"highest_fence"`
	ShortOfFunds  int     `json:"short_of_funds"`
	Backwards     int     `json:"counter_reset_refused"` // refused with a fence handed out twice: Redis lost the counter
	Unknown       int     `json:"unknown"`               // spends whose outcome is unknown
	Landed        int     `json:"landed"`                // how many of them the balance says landed; -1 if none fits
}

// CountRefusals sorts the spends of tally out: spender i drew fences[i], failed
// with errs[i] and stalled if stalled[i]. An error other than a stale fence
// or an unknown outcome is returned as it is, counted with the others.
//
// Fences grow with every lease, so a fence handed out twice means the
// counter went backwards: Redis lost it (a restart), and Fenced healed it from
// the highest fence PostgreSQL holds.
func CountRefusals(initial int64, tally wallet.Tally, fences []int64, errs []error, stalled []bool) (Refusals, error) {
	handedOut := map[int64]int{}
	for _, f := range fences {
		handedOut[f]++
	}
	r := Refusals{Spenders: len(fences), Initial: initial, RefusedFences: []int64{}, ShortOfFunds: tally.Refused, Unknown: tally.Unknown}
	for i, err := range errs {
		if stalled[i] {
			r.Stalled++
		}
		var stale *wallet.StaleFenceError
		switch {
		case err == nil, errors.Is(err, wallet.ErrUnknownOutcome):
			continue
		case !errors.As(err, &stale):
			return r, fmt.Errorf("%d of %d spends failed, first: %w", len(tally.Errors)-tally.Unknown, len(fences), err)
		}
		r.StaleRefused++
		r.RefusedFences = append(r.RefusedFences, stale.Fence)
		switch {
		case stalled[i]:
			r.StalledStale++
		case handedOut[stale.Fence] > 1:
			r.Backwards++
		}
	}
	slices.Sort(r.RefusedFences)
	return r, nil
}

// CountRefusals is the package's CountRefusals on the run's row, with
// the highest fence the row holds once every spender is done.
func (r *Run) CountRefusals(ctx context.Context, initial int64, tally wallet.Tally, fences []int64, errs []error, stalled []bool) (Refusals, error) {
	f, err := CountRefusals(initial, tally, fences, errs, stalled)
	if err == nil {
		f.HighestFence, err = r.Store.Fence(ctx, r.ID)
	}
	return f, err
}

// Lines says what was refused, and names every refusal that was not a
// stalled spender's.
func (r Refusals) Lines() []string {
	lines := []string{fmt.Sprintf("stale writes refused: %d, fences %v; highest fence %d", r.StaleRefused, r.RefusedFences, r.HighestFence)}
	if r.StalledStale < r.Stalled {
		lines = append(lines, fmt.Sprintf("stalled spenders that wrote anyway, safely (nobody claimed the row while they paused): %d", r.Stalled-r.StalledStale))
	}
	if r.Backwards > 0 {
		lines = append(lines, fmt.Sprintf("spenders refused because the fence counter went backwards (Redis lost it, as a restart does, and handed out fences again; the heal raised it to PostgreSQL's highest fence): %d", r.Backwards))
	}
	switch others := r.StaleRefused - r.StalledStale - r.Backwards; {
	case others > 0 && r.Backwards > 0:
		lines = append(lines, fmt.Sprintf("other spenders refused without a stall (their lease went with Redis's data, or a busy machine made them outlive it): %d", others))
	case others > 0:
		lines = append(lines, fmt.Sprintf("spenders refused without a stall (a busy machine, or -work near -ttl, made them outlive the lease): %d", others))
	}
	return lines
}
