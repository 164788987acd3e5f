package judge

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/launch"
)

// Test judges the lock a makes from a test of the learner's own, the way
// testing/fstest.TestFS checks a file system: one line,
//
//	func TestJudge(t *testing.T) { judge.Test(t, myAdapter) }
//
// Each property is a subtest: a pass passes, a failure fails with the
// sentence that says what broke, and a property the lock does not claim,
// or one the judge could not decide, is skipped with why. JUDGE_STEP=2
// (or 3, 5, faults) limits it to a chapter; JUDGE_SEED replays a
// schedule. It needs redis-server on PATH and, for step 5, the
// PostgreSQL of `make up`; without them it skips, or fails when CI is set.
//
// The test binary is started again as the holder processes, running only
// this test: in them Test serves the judge and exits.
func Test(t *testing.T, a Adapter) {
	t.Helper()
	if _, ok := os.LookupEnv(holderEnv); ok {
		Holder(a)
	}
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	f, err := ParseFlags([]string{"-step", os.Getenv("JUDGE_STEP"), "-seed", os.Getenv("JUDGE_SEED")}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t.Logf("judge: %s, seed %d (JUDGE_SEED=%d replays this schedule)", a.Name, f.Seed, f.Seed)
	rep, err := Run(ctx, Config{Adapter: a, Steps: f.Steps, Only: f.Only, Seed: f.Seed, Exe: exe,
		Args: []string{"-test.run=" + strings.Join(run, "/"), "-test.count=1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range rep.Verdicts {
		t.Run(v.ID, func(t *testing.T) {
			msg := stepName(v.Step) + ": " + v.Title + ": " + v.Why
			switch v.Outcome {
			case Pass:
				t.Log(msg)
			case Fail:
				t.Error(msg)
			case Broken:
				t.Log(string(Broken) + ": " + msg)
			default:
				t.Skip(string(v.Outcome) + ": " + msg)
			}
		})
	}
}
