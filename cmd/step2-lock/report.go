package main

// What step 2 checks besides the balance, and adds to its report.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"example.com/walletlock/internal/harness"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// releaseMethod asks the server its version and how Release will delete
// the lock key there, from the answer Release itself goes by
// (lock.HasDelex, asked once per client): "delex" where the server has
// DELEX and -release is not lua, "lua" otherwise. -release delex on a
// server without DELEX is an error that names the fix.
func releaseMethod(ctx context.Context, r *harness.Run, release string) (version, method string, err error) {
	if version, err = services.RedisVersion(ctx, r.Redis); err != nil {
		return "", "", err
	}
	delex, err := lock.HasDelex(ctx, r.Redis)
	switch {
	case err != nil:
		return "", "", fmt.Errorf("ask whether Redis has DELEX: %w", err)
	case release == "delex" && !delex:
		return "", "", fmt.Errorf("-release delex needs Redis 8.4 or later, this server is Redis %s; use -release lua or auto", version)
	case delex && release != "lua":
		return version, "delex", nil
	}
	return version, "lua", nil
}

// checks are step 2's own flag checks, after the harness's.
func checks(release string, n int, ttl, wait, work time.Duration) []error {
	var err error
	switch {
	case release != "auto" && release != "lua" && release != "delex":
		err = fmt.Errorf("-release: unknown release method %q (want auto, lua or delex)", release)
	case lock.CheckTTL(ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(ttl))
	case n < 1 || wait <= 0 || work < 0:
		err = errors.New("-n must be at least 1, -wait above 0 and -work at least 0")
	}
	return []error{err, harness.CheckMax("-n", n, harness.MaxN),
		harness.CheckDuration("-ttl", ttl), harness.CheckDuration("-wait", wait), harness.CheckDuration("-work", work)}
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
