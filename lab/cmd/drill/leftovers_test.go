//go:build unix

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
)

// Two drills whose prefixes once named one network (probe:abyzx: and
// probe:a06ad: share FNV-1a's 32 bits) each get a network of their own:
// the second makes its own beside the first's and touches none of the
// first's namespaces, which stay the same namespaces while both run.
func TestDrill_twoPartitionsNeverShareANetwork(t *testing.T) {
	needsNetns(t)
	pool := testenv.Postgres(t)
	before := drillNamespaces(t)
	var drills []*drillProc
	var nets []map[string]nsInfo
	for _, prefix := range []string{"probe:abyzx:", "probe:a06ad:"} {
		first := labtest.WalletID(t)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE owner = $1 AND id BETWEEN $2 AND $3", prefix, first, first+1)
		})
		// A partition long enough that the first drill is still in its
		// first run when the second has made its network.
		d := startDrill(t, nil, "-nemesis", "partition", "-strategy", "fenced", "-partition", "20s",
			"-prefix", prefix, "-first-id", fmt.Sprint(first))
		drills = append(drills, d)
		if len(nets) == 0 {
			nets = append(nets, awaitNetwork(t, d))
		} else {
			nets = append(nets, awaitNetworkOrHarm(t, d, nets[0]))
		}
	}
	now := drillNamespaces(t)
	for name, ns := range nets[0] {
		if got, ok := now[name]; !ok || got.ino != ns.ino {
			t.Errorf("the first drill's namespace %s was removed or made again while it ran", name)
		}
	}
	for name := range nets[1] {
		if _, ok := nets[0][name]; ok {
			t.Errorf("both drills named a namespace %s", name)
		}
	}
	if err := drills[1].stderr(); strings.Contains(err, "removed") {
		t.Errorf("the second drill removed something:\n%s", err)
	}
	for i := len(drills) - 1; i >= 0; i-- {
		d := drills[i]
		d.cmd.Process.Signal(syscall.SIGTERM)
		if code := d.exit(t); code != 130 {
			t.Errorf("drill %d = %d after SIGTERM, want 130; stderr:\n%s", i, code, d.stderr())
		}
		if left := leftNetwork(t, before, d.cmd.Process.Pid); len(left) > 0 {
			t.Errorf("drill %d left %s", i, strings.Join(left, ", "))
		}
	}
}

// A drill killed with SIGKILL leaves its network (its servers die with
// it). A later drill, on any prefix and any nemesis, removes that network
// as its owner is provably dead, says so, and leaves alone the network of
// a drill that runs.
func TestDrill_removesTheNetworkOfADeadDrillOnly(t *testing.T) {
	needsNetns(t)
	before := drillNamespaces(t)
	args := []string{"-nemesis", "partition", "-strategy", "fenced", "-partition", "20s", "-prefix"}

	livePrefix, _ := needs(t)
	live := startDrill(t, nil, append(args, livePrefix)...)
	liveNet := awaitNetwork(t, live)

	deadPrefix, _ := needs(t)
	dead := startDrill(t, nil, append(args, deadPrefix)...)
	deadNet := awaitNetwork(t, dead)
	dead.cmd.Process.Kill()
	<-dead.done

	prefix, _ := needs(t)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-nemesis", "none", "-strategy", "fenced", "-prefix", prefix}, &stdout, &stderr); code != 0 {
		t.Fatalf("a later drill = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	now := drillNamespaces(t)
	for name := range deadNet {
		if _, ok := now[name]; ok {
			t.Errorf("the dead drill's namespace %s is still there", name)
		}
		if !strings.Contains(stderr.String(), "namespace "+name) {
			t.Errorf("the later drill does not say it removed %s; stderr:\n%s", name, stderr.String())
		}
	}
	if left := leftNetwork(t, before, dead.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the dead drill's network is still there: %s", strings.Join(left, ", "))
	}
	for name, ns := range liveNet {
		if got, ok := now[name]; !ok || got.ino != ns.ino {
			t.Errorf("the live drill's namespace %s was removed or made again", name)
		}
	}
	live.cmd.Process.Signal(syscall.SIGTERM)
	if code := live.exit(t); code != 130 {
		t.Errorf("the live drill = %d after SIGTERM, want 130; stderr:\n%s", code, live.stderr())
	}
	live.leftNothing(t, livePrefix)
	if left := leftNetwork(t, before, live.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the live drill left %s", strings.Join(left, ", "))
	}
}

// A drill killed with SIGKILL leaves its folder in TMPDIR. A later drill
// removes it, as its owner is provably dead, says so, and leaves alone
// the folder of a drill that runs and a folder whose owner it cannot
// tell.
func TestDrill_removesTheFolderOfADeadDrillOnly(t *testing.T) {
	tmp := t.TempDir()
	folders := func() []string {
		m, _ := filepath.Glob(filepath.Join(tmp, "walletlock-drill-*"))
		return m
	}
	args := []string{"-nemesis", "pause", "-strategy", "lock", "-seeds", "5", "-prefix"}

	livePrefix, _ := needs(t)
	live := startDrillIn(t, tmp, nil, append(args, livePrefix)...)
	waitRows(t, live, livePrefix)
	liveDirs := folders()

	deadPrefix, _ := needs(t)
	dead := startDrillIn(t, tmp, nil, append(args, deadPrefix)...)
	waitRows(t, dead, deadPrefix)
	dead.cmd.Process.Kill()
	<-dead.done
	deadDirs := slices.DeleteFunc(folders(), func(p string) bool { return slices.Contains(liveDirs, p) })
	if len(liveDirs) != 1 || len(deadDirs) != 1 {
		t.Fatalf("the live drill has folders %q, the killed one left %q; want one each", liveDirs, deadDirs)
	}
	unknown, err := os.MkdirTemp(tmp, "walletlock-drill-")
	if err != nil {
		t.Fatal(err)
	}

	t.Setenv("TMPDIR", tmp)
	prefix, _ := needs(t)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-nemesis", "none", "-strategy", "fenced", "-prefix", prefix}, &stdout, &stderr); code != 0 {
		t.Fatalf("a later drill = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(deadDirs[0]); err == nil {
		t.Errorf("the dead drill's folder %s is still there", deadDirs[0])
	}
	if !strings.Contains(stderr.String(), "folder "+deadDirs[0]) {
		t.Errorf("the later drill does not say it removed %s; stderr:\n%s", deadDirs[0], stderr.String())
	}
	for _, p := range append(liveDirs, unknown) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s, a live drill's or of no known owner, was removed", p)
		}
	}
	os.Remove(unknown)
	live.cmd.Process.Signal(syscall.SIGTERM)
	if code := live.exit(t); code != 130 {
		t.Errorf("the live drill = %d after SIGTERM, want 130; stderr:\n%s", code, live.stderr())
	}
	live.leftNothing(t, livePrefix)
}
