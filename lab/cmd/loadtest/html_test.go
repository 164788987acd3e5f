package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// -html writes the report as one page beside the table.
func TestRun_htmlReport(t *testing.T) {
	page := filepath.Join(t.TempDir(), "report.html")
	var stdout, stderr bytes.Buffer
	args, _ := ownArgs(t, "-duration", "200ms", "-strategy", "lock,version", "-html", page)
	if code := run(t.Context(), args, &stdout, &stderr); code != 0 {
		t.Fatalf("run = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", ">lock<", ">version<", "<svg"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("the page does not contain %q", want)
		}
	}
	// Without none, there is no rate to hold the others against: n/a, as
	// the table says, not 0%.
	vsNone := regexp.MustCompile(`<td class="num">([^<]*)</td><td>`).FindAllSubmatch(html, -1) // the column before the verdict
	if len(vsNone) != 2 || !bytes.Contains(html, []byte(">vs none<")) {
		t.Fatalf("%d rows with vs none, want 2", len(vsNone))
	}
	for _, m := range vsNone {
		if string(m[1]) != "n/a" {
			t.Errorf("vs none in a run without none = %q, want n/a", m[1])
		}
	}
}

// A page that could not be written is refused before any work, as a bad
// flag: no Redis is reached (REDIS_ADDR names a closed port), one line,
// exit 2.
func TestRun_htmlInAMissingFolder(t *testing.T) {
	t.Setenv("REDIS_ADDR", "127.0.0.1:1")
	bad := filepath.Join(t.TempDir(), "missing", "report.html")
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-duration", "200ms", "-strategy", "version", "-html", bad}, &stdout, &stderr)
	if errs := stderr.String(); code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, bad) || !strings.Contains(errs, "does not exist") {
		t.Errorf("run with -html in a missing folder = %d, stderr %q; want 2 and one line naming %s", code, errs, bad)
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout = %q, want nothing", stdout.String())
	}
	dir := t.TempDir()
	stderr.Reset()
	if code := run(t.Context(), []string{"-html", dir}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "is a folder") {
		t.Errorf("run with -html naming a folder = %d, stderr %q; want 2, saying it is a folder", code, stderr.String())
	}
}
