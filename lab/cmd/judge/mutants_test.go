package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/lockbuild"
	"example.com/walletlock/lab/judge"
)

// judgeMutant builds the program that judges the mutant or variant named
// name, runs it on property (seed 1, -json), and returns its verdict.
func judgeMutant(t *testing.T, name, property string) judge.Verdict {
	t.Helper()
	m, ok := lockbuild.MutantNamed(name)
	if !ok {
		t.Fatalf("no mutant %s", name)
	}
	b, err := lockbuild.BuildMutant(t.Context(), repo(t), m)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Remove()
	cmd := exec.CommandContext(t.Context(), b.Exe, "-json", "-seed", "1", "-only", property)
	cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Run()
	var rep judge.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Verdicts) != 1 {
		t.Fatalf("judge -lock mutant:%s -only %s: %v, %d verdicts; stdout:\n%s\nstderr:\n%s", name, property, err, len(rep.Verdicts), stdout.String(), stderr.String())
	}
	return rep.Verdicts[0]
}

// Each check-then-act mutant (two commands where the article's lock sends
// one script) fails the property its mistake breaks, and the verdict
// names the boundary it was stopped at and the likely fix.
func TestMutants_failTheirPropertyAtTheBoundary(t *testing.T) {
	needsRedisServer(t)
	testenv.Postgres(t) // the fencing chapter's
	for _, c := range []struct {
		mutant, property, first, second string
		// racy: the mistake also breaks the property in the burst of
		// holders that comes before any stop, when the machine is busy
		// enough; the verdict then names the two fences, not a boundary.
		racy string
	}{
		{"release-get-del", "release-own", "GET", "DEL", ""},
		{"refresh-get-pexpire", "refresh-own", "GET", "PEXPIRE", ""},
		{"fenced-set-incr", "stale-write", "SET", "INCR", ""},
		{"fenced-incr-set", "fences-increase", "INCR", "SET", ": not higher"},
	} {
		t.Run(c.mutant, func(t *testing.T) {
			v := judgeMutant(t, c.mutant, c.property)
			if v.Outcome != "FAIL" || v.Fix == "" {
				t.Fatalf("mutant %s on %s: %s, want FAIL with a fix: %s", c.mutant, c.property, v.Outcome, v.Line())
			}
			if c.racy != "" && strings.Contains(v.Why, c.racy) && !strings.Contains(v.Why, "stopped it") {
				t.Logf("mutant %s broke %s before any stop: %s", c.mutant, c.property, v.Why)
				return
			}
			for _, want := range []string{"after its 1st command (" + c.first + " ", "before its 2nd (" + c.second + " "} {
				if !strings.Contains(v.Why, want) {
					t.Errorf("mutant %s: the verdict does not name the boundary, %q:\n%s", c.mutant, want, v.Line())
				}
			}
		})
	}
}

// Each variant, correct but written another way (WATCH and MULTI instead
// of a script), passes the property about the call it changes, boundaries
// and held replies included.
func TestVariants_passTheirProperty(t *testing.T) {
	needsRedisServer(t)
	testenv.Postgres(t)
	for _, c := range []struct{ variant, property string }{
		{"release-watch", "release-own"},
		{"refresh-watch", "refresh-own"},
		{"fenced-multi", "fences-increase"},
	} {
		t.Run(c.variant, func(t *testing.T) {
			if v := judgeMutant(t, c.variant, c.property); v.Outcome != "pass" {
				t.Errorf("variant %s on %s: %s", c.variant, c.property, v.Line())
			}
		})
	}
}
