package judge

import (
	"context"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/launch"
)

// Test judges the lock a makes, from a test of the lock's own, the way
// testing/fstest.TestFS checks a file system: one line,
//
//	func TestJudge(t *testing.T) { judge.Test(t, adapter) }
//
// with at most one Options after a to say what to judge. Each property is
// a subtest: a pass passes, a failure fails with the sentence that says
// what broke and the likely fix, and a property the lock does not claim,
// or one the judge could not decide, is skipped with why. The judging
// ends before the test's deadline (go test -timeout).
//
// It needs redis-server on PATH and, for the fencing chapter, a
// PostgreSQL (Options.Database, or DATABASE_URL); without them it skips,
// or fails when the CI variable is set. The test binary is started again
// as the holder processes, running only this test: in them, Test serves
// the judge and exits.
func Test(t *testing.T, a Adapter, opts ...Options) {
	t.Helper()
	if os.Getenv(holderEnv) == a.Name {
		os.Exit(serve(a, os.Stdin, os.Stdout))
	}
	var o Options
	switch len(opts) {
	case 0:
	case 1:
		o = opts[0]
	default:
		t.Fatalf("judge.Test takes at most one Options, got %d", len(opts))
	}
	if a.Name == "" || (a.New == nil) == (len(a.Command) == 0) {
		t.Fatal("judge: the Adapter needs a Name, and either New or Command")
	}
	for _, ch := range o.Chapters {
		if _, ok := chapterOf(ch); !ok {
			t.Fatalf("judge: Options.Chapters: no chapter %q; the chapters are %s", ch, chapterNames())
		}
	}
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	if o.Page != "" {
		if err := harness.CheckPageOf("judge: Options.Page", o.Page); err != nil {
			t.Fatal(err)
		}
	}
	if o.Seed == 0 {
		o.Seed = freshSeed()
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	var pattern []string
	for _, part := range strings.Split(t.Name(), "/") {
		pattern = append(pattern, "^"+regexp.QuoteMeta(part)+"$")
	}
	// The judging ends well before the test's deadline, so that its
	// clean-up, and the report, still happen.
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-min(30*time.Second, time.Until(deadline)/10)))
		defer cancel()
	}
	if note := removeLeftovers(); note != "" {
		t.Log(note)
	}
	t.Logf("judge: %s, seed %d (Options{Seed: %d} replays this schedule)", a.Name, o.Seed, o.Seed)
	rep, err := run(ctx, config{adapter: a, o: o, exe: exe, workDir: wd, note: func(s string) { t.Log(s) },
		args: []string{"-test.run=" + strings.Join(pattern, "/"), "-test.count=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if o.Page != "" {
		if err := harness.SavePage(o.Page, func(w io.Writer) error { return writePage(w, rep) }); err != nil {
			t.Error(err)
		}
	}
	for _, v := range rep.Verdicts {
		t.Run(v.ID, func(t *testing.T) {
			msg := v.Line()
			for _, l := range v.Output {
				msg += "\n    the lock printed, " + l
			}
			switch {
			case v.Outcome == pass:
				t.Log(msg)
			case v.Outcome == fail:
				t.Error(msg)
			case v.Outcome == broken:
				t.Log(msg)
			case slices.Contains([]string{unknown, notClaimed}, v.Outcome):
				t.Skip(msg)
			}
		})
	}
	if rep.Interrupted != "" {
		t.Errorf("judge: stopped by %s before the judging ended: give the test more time (go test -timeout)", rep.Interrupted)
	}
}
