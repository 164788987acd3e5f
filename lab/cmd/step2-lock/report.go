package main

// What step 2 checks besides the balance, and adds to its report; and its
// own flag.

import (
	"errors"
	"fmt"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
)

// checkRelease is step 2's own flag check, before the harness's
// (LockFlags.Check).
func checkRelease(release string) error {
	if release != "auto" && release != "lua" && release != "delex" {
		return fmt.Errorf("-release: unknown release method %q (want auto, lua or delex)", release)
	}
	return nil
}

// outcome is the run's check, and whether the lock key is left behind,
// read even after Ctrl-C; with the failed and unknown spends and releases
// in the report, and a problem for each thing that went wrong.
func outcome(r *harness.Run, tally wallet.Tally, verdict wallet.Verdict, spenders int, lockKey, how string) (harness.Outcome, error) {
	done, cancel := r.Cleanup()
	defer cancel()
	n, err := r.Redis.Exists(done, lockKey).Result()
	if err != nil {
		return harness.Outcome{}, fmt.Errorf("its lock key could not be read back (%w)", err)
	}
	left := n > 0
	o := harness.Outcome{Verdict: verdict, Lines: []string{fmt.Sprintf("lock key left behind: %s (%s)", yesNo(left), how)}}
	failedReleases := r.Also.List()
	unknownReleases := 0 // their reply was lost: deleted or not, nobody knows
	for _, err := range failedReleases {
		if errors.Is(err, lock.ErrUnknown) {
			unknownReleases++
		}
	}
	r.Report.Set("lock_left", left)
	r.Report.Set("failed_spends", len(tally.Errors))
	r.Report.Set("unknown_spends", tally.Unknown)
	r.Report.Set("failed_releases", len(failedReleases))
	r.Report.Set("unknown_releases", unknownReleases)
	if line := harness.Outcomes(tally, spenders, verdict); line != "" {
		o.Problems = append(o.Problems, line)
	}
	if len(failedReleases) > 0 {
		o.Problems = append(o.Problems, fmt.Sprintf("%d releases failed, first: %v (%d of them with an unknown outcome: the reply was lost)", len(failedReleases), failedReleases[0], unknownReleases))
	}
	if left {
		o.Problems = append(o.Problems, fmt.Sprintf("the lock key %s is still there after every spender released it", lockKey))
	}
	return o, nil
}

func yesNo(b bool) string {
	if b {
		return "YES"
	}
	return "no"
}
