package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -html writes the report as one page beside the table. A page that cannot
// be written is one line and exit 1; the table is printed all the same.
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

	stdout.Reset()
	stderr.Reset()
	bad := filepath.Join(t.TempDir(), "missing", "report.html")
	args, _ = ownArgs(t, "-duration", "200ms", "-strategy", "version", "-html", bad)
	code := run(t.Context(), args, &stdout, &stderr)
	if errs := stderr.String(); code != 1 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, bad) {
		t.Errorf("run with -html in a missing folder = %d, stderr %q; want 1 and one line naming %s", code, errs, bad)
	}
	if !strings.Contains(stdout.String(), "version") {
		t.Errorf("stdout:\n%s\nwant the table all the same", stdout.String())
	}
}
