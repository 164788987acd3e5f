//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/drill"
	"example.com/walletlock/lab/internal/lesson"
	"example.com/walletlock/lab/internal/testenv"
)

// needsNetns skips where the drill cannot make network namespaces (not
// root, no ip), or fails under CI, which runs as root.
func needsNetns(t *testing.T) {
	t.Helper()
	if err := drill.CanPartition(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// network is what `ip netns list` and `ip -o link` show, sorted, without
// the counters and states that change on their own.
func network(t *testing.T) string {
	t.Helper()
	ns, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	links, err := exec.Command("ip", "-o", "link").Output()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range strings.Split(string(links), "\n") {
		if f := strings.Fields(l); len(f) > 1 {
			names = append(names, f[1])
		}
	}
	return "namespaces:\n" + string(ns) + "links: " + strings.Join(names, " ")
}

// The partition cell of `make test`: the old primary keeps granting on
// its side of the cut, lock loses money and fenced does not, as the
// lesson says, and the drill leaves no namespace, link or row behind.
func TestDrill_partitionMatchesLesson(t *testing.T) {
	needsNetns(t)
	prefix, first := needs(t)
	before := network(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nemesis", "partition", "-strategy", "lock,fenced", "-partition", "1s", "-json",
		"-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	dec := json.NewDecoder(&stdout)
	seen := 0
	for dec.More() {
		var r struct {
			Strategy, Verdict, Lost string
			Window                  *int64 `json:"window_ms"`
			WindowDoubleGrants      int    `json:"window_double_grants"`
			OldPrimaryGrants        int    `json:"old_primary_grants"`
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("a row is not JSON: %v", err)
		}
		seen++
		cell, _ := lesson.DrillWant(drill.Partition, r.Strategy)
		if r.Verdict != cell.Want {
			t.Errorf("%s: %s, the lesson says %s", r.Strategy, r.Verdict, cell.Want)
		}
		if r.OldPrimaryGrants == 0 || !strings.Contains(r.Lost, "lock grants of the old primary") {
			t.Errorf("%s: %d grants of the old primary after the cut, lost %q; want the old primary granting on its own side", r.Strategy, r.OldPrimaryGrants, r.Lost)
		}
		// How long two primaries granted at once, and how many double
		// grants fell in that time, are this run's numbers: on a busy
		// machine the window can measure 0 while lock still loses money
		// (the verdict above). They are logged, not asserted.
		window := int64(-1) // no window measured
		if r.Window != nil {
			window = *r.Window
		}
		t.Logf("%s: %s; two primaries at once for %d ms, %d double grants across them, %d grants of the old primary",
			r.Strategy, r.Verdict, window, r.WindowDoubleGrants, r.OldPrimaryGrants)
	}
	if seen != 2 {
		t.Errorf("%d rows, want 2", seen)
	}
	if after := network(t); after != before {
		t.Errorf("the network changed.\nbefore: %s\nafter:  %s", before, after)
	}
}

// Where the drill cannot make namespaces it leaves the partition out, in
// one line that says why and how, runs the rest, and exits 3: not a pass.
func TestDrill_partitionLeftOutWithoutIP(t *testing.T) {
	prefix, first := needs(t)
	bin, _ := exec.LookPath("redis-server")
	dir := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(dir, "redis-server")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	var stdout, stderr bytes.Buffer
	// fenced, whose verdict holds however slow the machine: a lease that
	// lapses under load cannot make it BROKEN, so the exit code is the
	// left-out partition's alone.
	code := run(t.Context(), []string{"-nemesis", "none,partition", "-strategy", "fenced", "-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != ExitLeftOut {
		t.Fatalf("drill = %d, want %d; stderr:\n%s", code, ExitLeftOut, stderr.String())
	}
	if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, "left out -nemesis partition") ||
		!strings.Contains(got, "iproute2") && !strings.Contains(got, "on Linux") {
		t.Errorf("stderr = %q, want one line that says the partition was left out and how to run it", got)
	}
	if !strings.Contains(stdout.String(), "none     fenced  seed 1") {
		t.Errorf("the other nemesis did not run:\n%s", stdout.String())
	}
}

// Ctrl-C and SIGTERM in the middle of a partition: the drill exits 130
// and leaves no namespace, link, process or row.
func TestDrill_partitionCleansUpOnSignal(t *testing.T) {
	needsNetns(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			prefix, _ := needs(t)
			before := network(t)
			d := startDrill(t, nil, "-nemesis", "partition", "-strategy", "lock", "-seeds", "3", "-prefix", prefix)
			tag := drill.NetTag(prefix)
			for deadline := time.Now().Add(30 * time.Second); !strings.Contains(network(t), tag); time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("no namespace of the drill within 30 s; stderr:\n%s", d.stderr())
				}
			}
			waitRows(t, d, prefix)
			time.Sleep(3 * time.Second) // into the partition, most likely
			d.cmd.Process.Signal(sig)
			if code := d.exit(t); code != 130 {
				t.Errorf("drill = %d after %v, want 130; stderr:\n%s", code, sig, d.stderr())
			}
			d.leftNothing(t, prefix)
			if after := network(t); after != before {
				t.Errorf("the network changed.\nbefore: %s\nafter:  %s", before, after)
			}
		})
	}
}

func TestDrill_partitionBadFlags(t *testing.T) {
	testenv.BadFlags(t, run, []testenv.BadFlag{
		{Name: "a partition too short", Args: []string{"-partition", "10ms"}, Want: "-partition"},
		{Name: "a partition too long", Args: []string{"-partition", "1h"}, Want: "-partition"},
	})
}
