package walletlock_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// Each program links what it uses: no step links the drill's plumbing,
// and step 1, which takes no lock, links no lock library. (Step 1 still
// links lock and pgx: internal/harness imports lock for its run lease and
// step 5's fencing, and pgxpool for step 5's row; wallet imports pgx for
// its Store, and internal/services for ConnectPostgres. Add them to
// step1-race's list once the harness's lease and row, wallet's Store and
// services' PostgreSQL half live in packages step 1 does not import.)
func TestDeps_eachProgramLinksWhatItUses(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the programs' packages: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	everyStep := []string{"example.com/walletlock/internal/drill"}
	forbidden := map[string][]string{
		"step1-race": {"github.com/go-redsync/redsync", "github.com/bsm/redislock"},
	}
	steps := 0
	for line := range strings.Lines(string(out)) {
		deps := strings.Fields(line)
		prog := path.Base(deps[0])
		if !strings.HasPrefix(prog, "step") {
			continue
		}
		steps++
		for _, bad := range append(everyStep, forbidden[prog]...) {
			for _, d := range deps[1:] {
				if d == bad || strings.HasPrefix(d, bad+"/") {
					t.Errorf("cmd/%s links %s (via %s)", prog, bad, d)
					break
				}
			}
		}
	}
	if steps < 6 {
		t.Errorf("go list named %d step programs, want the 6 of cmd/step*", steps)
	}
}
