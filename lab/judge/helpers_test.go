package judge

import (
	"os"
	"testing"

	"example.com/walletlock/lab/internal/launch"
)

// testConfig judges a from this test binary: started again by the judge
// as a holder of a, it serves the judge and exits here. It skips without
// redis-server, or fails when CI is set.
func testConfig(t *testing.T, a Adapter, o Options) config {
	t.Helper()
	if os.Getenv(holderEnv) == a.Name {
		os.Exit(serve(a, os.Stdin, os.Stdout))
	}
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	return config{adapter: a, o: o, exe: exe, workDir: wd, args: []string{"-test.run=^" + t.Name() + "$", "-test.count=1"}}
}

// judgeOne judges the one property id of a, with seed 1.
func judgeOne(t *testing.T, a Adapter, id string) Verdict {
	t.Helper()
	rep, err := run(t.Context(), testConfig(t, a, Options{Only: []string{id}, Chapters: []string{"lease", "guards"}, Seed: 1}))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Verdicts) != 1 {
		t.Fatalf("judged %d properties, want %s alone", len(rep.Verdicts), id)
	}
	return rep.Verdicts[0]
}
