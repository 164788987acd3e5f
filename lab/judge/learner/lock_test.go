package learner

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/judge"
)

// The judge, in one line: every property of step 2, and steps 3 and 5's
// marked "not claimed" (skipped), since this lock has no refresh, watchdog
// or fence yet.
func TestJudge(t *testing.T) {
	judge.Test(t, judge.Article[*Lock, *redis.Client]{Name: "learner", Acquire: Acquire, Release: (*Lock).Release, NotHeld: ErrNotHeld}.Adapter())
}
