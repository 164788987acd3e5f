package walletlock_test

import (
	"os/exec"
	"path"
	"strings"
	"testing"
)

// Each program links what it uses: no step links the drill's plumbing,
// and step 1, which takes no lock and keeps its wallet in Redis, links no
// lock (neither this repo's nor a library's) and no PostgreSQL driver.
// What would pull them in lives apart: the harness's run lease is plain
// commands (internal/harness/lease.go), step 5's row and fencing are in
// internal/fencing, the wallet's PostgreSQL half in wallet/postgres.
func TestDeps_eachProgramLinksWhatItUses(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the programs' packages: %v", err)
	}
	out, err := exec.Command(gobin, "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}", "./cmd/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	everyStep := []string{"example.com/walletlock/lab/internal/drill"}
	forbidden := map[string][]string{
		"step1-race": {"github.com/go-redsync/redsync", "github.com/bsm/redislock", "github.com/jackc/pgx",
			"example.com/walletlock/lab/lock", "example.com/walletlock/lab/internal/fencing", "example.com/walletlock/lab/wallet/postgres"},
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
