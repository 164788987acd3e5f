package step_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The run's lease is not taken with lock/, whose functions `make exercise`
// turns into stubs: a step that does not teach them (steps 1 and 4 use no
// lock at all) runs whatever lock/ holds.
func TestStep_takesItsLeaseWithoutTheLessonsLock(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for pkg := range strings.FieldsSeq(string(out)) {
		if pkg == "example.com/walletlock/lock" {
			t.Error("package step imports example.com/walletlock/lock: after make exercise, every step would fail at its start")
		}
	}
}
