package walletlock_test

import (
	"os/exec"
	"regexp"
	"testing"
)

// make lint runs actionlint on the workflows, as .github/workflows/ci.yml
// says it does: `make -n` prints every command a target would run.
func TestMakefile_lintRunsActionlint(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make here:", err)
	}
	out, err := exec.Command("make", "-C", repo, "-n", "lint").CombinedOutput()
	if err != nil {
		t.Fatalf("make -n lint: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`(?m)^\S*actionlint(\s|$)`).Match(out) {
		t.Errorf("make lint runs no actionlint; it runs:\n%s", out)
	}
}
