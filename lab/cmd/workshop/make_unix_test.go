//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The room's targets take what a facilitator or a participant types (a
// page's name, a label, an address, a join line, a list of files) and
// give it to the program as it is: nothing in it runs, in make or in the
// shell, and each value is one argument (FILES one a file). The program
// here is a stand-in that prints its arguments, one a line.
func TestMake_passesTheRoomsValuesAsTheyAre(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make")
	}
	mk, err := os.ReadFile(filepath.Join("..", "..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, ".services", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), mk, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "workshop"), []byte("#!/bin/sh\nfor a; do printf '%s\\n' \"$a\"; done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// FILES is a list: a name with a space would be two.
	listed := func(v string) string { return strings.ReplaceAll(v, " ", "") }
	odd := []string{`it's "mine".html`, "$(shell touch pwned)", "`touch pwned`", "$$(touch pwned)", "a;touch pwned"}
	for _, c := range []struct {
		target string
		set    func(v string) []string
		want   func(v string) []string
	}{
		{"compare", func(v string) []string { return []string{"ROOM=" + v, "FILES=a.json " + listed(v)} },
			func(v string) []string { return []string{"-compare", "-html", v, "a.json", listed(v)} }},
		{"room", func(v string) []string { return []string{"ADDR=" + v} },
			func(v string) []string { return []string{"-serve", "-addr", v} }},
		{"race", func(v string) []string { return []string{"ROOM=" + v, "LABEL=" + v, "LOCK=" + v} },
			func(v string) []string { return []string{"-race", "-room", v, "-lock", v, "-host", v} }},
		{"workshop", func(v string) []string { return []string{"ROOM=" + v, "LABEL=" + v} },
			func(v string) []string { return []string{"-save", "-host", v, "-room", v} }},
	} {
		for _, v := range odd {
			args := append([]string{"--no-print-directory", "-s", "-o", "up", "-o", "workshop-bin", c.target}, c.set(v)...)
			cmd := exec.Command("make", args...)
			cmd.Dir = dir
			cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool {
				name, _, _ := strings.Cut(kv, "=")
				return slices.Contains([]string{"MAKELEVEL", "MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES"}, name)
			})
			out, err := cmd.CombinedOutput()
			got := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
			if err != nil || !slices.Equal(got, c.want(v)) {
				t.Errorf("make %s %q: %v, the program got %q, want %q", c.target, c.set(v), err, got, c.want(v))
			}
			if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
				t.Fatalf("make %s %q ran a command the value holds", c.target, c.set(v))
			}
		}
	}
}
