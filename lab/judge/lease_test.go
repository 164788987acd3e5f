package judge

import "testing"

// A lock whose Acquire starts its own watchdog sends renewals while the
// judge waits for its lease to lapse: the holder must stand still at the
// wire, as a paused process does, for the late release to be judged at
// all.
func TestReleaseOwn_aLeaseThatRenewsItself(t *testing.T) {
	rep := judged(t, t.Context(), "renewing", "release-own")
	if len(rep.Verdicts) != 1 {
		t.Fatalf("%d verdicts, want release-own's", len(rep.Verdicts))
	}
	if v := rep.Verdicts[0]; v.Outcome != pass {
		t.Errorf("%s: %s; want a pass", v.Outcome, v.Why)
	}
}
