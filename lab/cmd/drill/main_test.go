//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/drill"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/lesson"
)

// The drill starts its own binary again as a spender; under go test that
// binary is this test binary, which must then be a spender and nothing else.
func TestMain(m *testing.M) {
	if c, ok := drill.SpenderRole(); ok {
		os.Exit(drill.RunSpender(c, os.Stdin, os.Stdout, os.Stderr))
	}
	if os.Getenv(asMain) != "" {
		main() // the drill as a program of its own, for startDrill
	}
	os.Exit(m.Run())
}

// needs skips (or fails under CI) without PostgreSQL or redis-server, and
// returns a prefix and a first wallet id no other test uses.
func needs(t *testing.T) (prefix, firstID string) {
	t.Helper()
	pool := testenv.Postgres(t)
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	id := labtest.WalletID(t)
	name := strings.Map(func(r rune) rune { // what a prefix may hold (harness.CheckPrefix)
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(harness.PrefixChars, r) {
			return r
		}
		return '-'
	}, t.Name())
	prefix = fmt.Sprintf("test:%s:%d:", name, id)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE owner = $1", prefix)
	})
	return prefix, fmt.Sprint(id)
}

func rowsLeft(t *testing.T, prefix string) int {
	t.Helper()
	var n int
	if err := testenv.Postgres(t).QueryRow(t.Context(), "SELECT count(*) FROM walletlock_wallets WHERE owner = $1", prefix).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// The short drill of `make test`: pause and restart, lock and fenced, two
// seeds each, must give what the lesson table says in every seed: the lock
// breaks (and restart shows a double grant), the fence never does.
func TestDrill_shortMatchesLesson(t *testing.T) {
	matchesLesson(t, 8, "-nemesis", "pause,restart", "-strategy", "lock,fenced", "-seeds", "2")
}

// The failover of the master that holds the wallet's slot, in a Redis
// Cluster the drill starts itself: the lock breaks, the fence does not.
func TestDrill_clusterFailoverMatchesLesson(t *testing.T) {
	matchesLesson(t, 2, "-nemesis", drill.ClusterFailover, "-strategy", "lock,fenced")
}

// matchesLesson runs the drill with args and checks that each of its rows
// (want of them) gives the lesson table's verdict, and that it leaves no
// row behind.
func matchesLesson(t *testing.T, want int, args ...string) {
	t.Helper()
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), append(args, "-json", "-prefix", prefix, "-first-id", first), &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	dec := json.NewDecoder(&stdout)
	seen := 0
	for dec.More() {
		var r struct {
			Nemesis, Strategy, Verdict, Want string
			Seed                             int64
			OK                               bool
			MoneyOff                         int64 `json:"money_off"`
			DoubleGrants                     int   `json:"double_grants"`
			Unknown                          int
			Faults                           int
			Linearizable                     string
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("a row is not JSON: %v", err)
		}
		seen++
		cell, ok := lesson.DrillWant(r.Nemesis, r.Strategy)
		if !ok {
			t.Fatalf("row for %s/%s, which the lesson table lacks", r.Nemesis, r.Strategy)
		}
		name := fmt.Sprintf("%s %s seed %d", r.Nemesis, r.Strategy, r.Seed)
		if r.Verdict != cell.Want || r.Want != cell.Want || r.OK != (cell.Want == lesson.OK) {
			t.Errorf("%s: verdict %s (ok %v, want field %s), the lesson says %s", name, r.Verdict, r.OK, r.Want, cell.Want)
		}
		if w, _ := lesson.WantHistory(lesson.DrillStep, lesson.DrillPhase(r.Nemesis, r.Strategy)); r.Linearizable != w {
			t.Errorf("%s: linearizable=%q, the lesson says %s", name, r.Linearizable, w)
		}
		if r.Faults != 1 {
			t.Errorf("%s: %d faults injected, want 1", name, r.Faults)
		}
		if r.OK != (r.MoneyOff == 0) {
			t.Errorf("%s: ok %v but money_off %d", name, r.OK, r.MoneyOff)
		}
		if r.Nemesis == drill.Restart && r.DoubleGrants == 0 {
			t.Errorf("%s: no double grant, though Redis came back empty under a holder", name)
		}
	}
	if seen != want {
		t.Errorf("%d rows, want %d (nemeses x strategies x seeds)", seen, want)
	}
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
}

// Redlock under the restart nemesis, two seeds each: a node is down when
// a holder takes the lock, comes back empty, and one of the holder's two
// nodes restarts empty. Another spender wins a majority while the first
// holds, every seed: redlock loses money, redlock-fenced does not. Both
// count the double grant; each run injects two faults.
func TestDrill_redlockRestartGrantsTwice(t *testing.T) {
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nemesis", "restart", "-strategy", "redlock,redlock-fenced", "-seeds", "2",
		"-json", "-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	dec := json.NewDecoder(&stdout)
	seen := 0
	for dec.More() {
		var r struct {
			Strategy, Verdict, Note string
			Seed                    int64
			MoneyOff                int64 `json:"money_off"`
			DoubleGrants            int   `json:"double_grants"`
			Faults                  int
		}
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("a row is not JSON: %v", err)
		}
		seen++
		name := fmt.Sprintf("%s seed %d", r.Strategy, r.Seed)
		want := map[string]string{drill.Redlock: lesson.Broken, drill.RedlockFenced: lesson.OK}[r.Strategy]
		if r.Verdict != want || (r.MoneyOff == 0) != (want == lesson.OK) {
			t.Errorf("%s: %s with %d off, want %s", name, r.Verdict, r.MoneyOff, want)
		}
		if r.DoubleGrants == 0 || r.Faults != 2 || !strings.Contains(r.Note, "won a majority") {
			t.Errorf("%s: %d double grants, %d faults, note %q; want a double grant after two faults", name, r.DoubleGrants, r.Faults, r.Note)
		}
	}
	if seen != 4 {
		t.Errorf("%d rows, want 4 (2 strategies x 2 seeds)", seen)
	}
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
}

// A Sentinel failover means nothing to Redlock's independent nodes: the
// drill says so and runs nothing.
func TestDrill_failoverDoesNotApplyToRedlock(t *testing.T) {
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nemesis", "failover", "-strategy", "redlock", "-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "failover redlock skipped: Redlock's nodes are independent masters") {
		t.Errorf("stdout does not say failover was skipped:\n%s", stdout.String())
	}
}

// Ctrl-C in the middle of a run: the drill kills what it started, deletes
// its rows and exits 130, in bounded time.
func TestDrill_interrupt(t *testing.T) {
	prefix, first := needs(t)
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(1500*time.Millisecond, cancel)
	var stdout, stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"-nemesis", "pause", "-strategy", "lock", "-seeds", "5",
			"-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	}()
	select {
	case code := <-done:
		if code != 130 {
			t.Fatalf("drill = %d after Ctrl-C, want 130; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drill did not stop within 20 s of Ctrl-C")
	}
	if !strings.Contains(stderr.String(), "interrupted by Ctrl-C") {
		t.Errorf("stderr does not say it was interrupted:\n%s", stderr.String())
	}
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
}

func TestDrill_badFlags(t *testing.T) {
	labtest.BadFlags(t, run, []labtest.BadFlag{
		{Name: "unknown nemesis", Args: []string{"-nemesis", "meteor"}, Want: "-nemesis"},
		{Name: "unknown strategy", Args: []string{"-strategy", "hope"}, Want: "-strategy"},
		{Name: "too many seeds", Args: []string{"-seeds", "1000"}, Want: "-seeds"},
		{Name: "one process", Args: []string{"-procs", "1"}, Want: "-procs"},
		{Name: "short ttl", Args: []string{"-ttl", "1ms"}, Want: "-ttl"},
		{Name: "work as long as the ttl", Args: []string{"-work", "1s"}, Want: "-work"},
		{Name: "empty prefix", Args: []string{"-prefix", ""}, Want: "-prefix"},
		{Name: "a prefix that would break the printed SQL", Args: []string{"-prefix", "walletlock:bob's:"}, Want: "-prefix may hold only"},
		{Name: "a prefix that a pasted command would run", Args: []string{"-prefix", "walletlock:$(touch x):"}, Want: "-prefix may hold only"},
		{Name: "seeds that would wrap past 2^63", Args: []string{"-seed", "9223372036854775807", "-seeds", "3"}, Want: "-seed 9223372036854775807 leaves no room for -seeds 3"},
		{Name: "stray argument", Args: []string{"now"}, Want: "unexpected argument"},
	})
}

// Without redis-server the drill says how to get it, in one line.
func TestDrill_noRedisServer(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-nemesis", "none"}, &stdout, &stderr); code != 1 {
		t.Fatalf("drill = %d, want 1", code)
	}
	if got := stderr.String(); !strings.Contains(got, "make up") || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr = %q, want one line that names `make up`", got)
	}
}

// A cell the drill runs must have a verdict in the lesson table, and a
// cell it skips must have none: otherwise `-nemesis all -strategy all`
// runs a cell nobody judged, or skips one the lesson promises.
func TestApplies_runsExactlyTheLessonsCells(t *testing.T) {
	for _, n := range drill.Nemeses {
		for _, s := range drill.Strategies {
			applies, why := drill.Applies(n, s)
			_, judged := lesson.DrillWant(n, s)
			if applies != judged {
				t.Errorf("%s/%s: Applies = %v (%s), but the lesson table has a cell for it: %v", n, s, applies, why, judged)
			}
		}
	}
}

// asMain makes this test binary run the drill's main (see TestMain).
const asMain = "WALLETLOCK_DRILL_TEST_MAIN"

// drillProc is the drill run as a program of its own, with the signal
// handling of harness.Main, in a temporary folder of the test's own.
type drillProc struct {
	cmd    *exec.Cmd
	tmp    string // its TMPDIR
	marker string // in the environment of every process it starts
	errOut string // the file of its stderr
	done   chan struct{}
}

// stderr is what the drill has written to stderr so far.
func (d *drillProc) stderr() string {
	b, _ := os.ReadFile(d.errOut)
	return string(b)
}

// startDrill starts the drill with args, in a TMPDIR of its own; stdout
// is its standard output.
func startDrill(t *testing.T, stdout *os.File, args ...string) *drillProc {
	t.Helper()
	return startDrillIn(t, t.TempDir(), stdout, args...)
}

// startDrillIn starts the drill with args and TMPDIR tmp, which drills
// may share.
func startDrillIn(t *testing.T, tmp string, stdout *os.File, args ...string) *drillProc {
	t.Helper()
	d := &drillProc{tmp: tmp, marker: fmt.Sprintf("walletlock-drill-test-%d", labtest.WalletID(t)), done: make(chan struct{})}
	d.cmd = exec.Command(os.Args[0], args...)
	d.cmd.Env = append(os.Environ(), asMain+"=1", "TMPDIR="+d.tmp, "WALLETLOCK_TEST_MARKER="+d.marker)
	d.errOut = filepath.Join(d.tmp, "stderr."+d.marker)
	errFile, err := os.Create(d.errOut)
	if err != nil {
		t.Fatal(err)
	}
	defer errFile.Close() // the drill has its copy
	d.cmd.Stdout, d.cmd.Stderr = stdout, errFile
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() { d.cmd.Process.Kill(); <-d.done })
	return d
}

// exit waits for the drill to end and returns its exit code.
func (d *drillProc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-d.done:
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(30 * time.Second):
		t.Fatalf("the drill still runs 30 s later; stderr:\n%s", d.stderr())
		return 0
	}
}

// leftNothing requires that the drill left no row of prefix, no
// temporary folder and no process.
func (d *drillProc) leftNothing(t *testing.T, prefix string) {
	t.Helper()
	if n := rowsLeft(t, prefix); n != 0 {
		t.Errorf("%d rows of the drill left in PostgreSQL", n)
	}
	if left, _ := filepath.Glob(filepath.Join(d.tmp, "walletlock-drill-*")); len(left) > 0 {
		t.Errorf("temporary folders left: %q", left)
	}
	// Its processes were killed and reaped before it exited; a short grace
	// for /proc to catch up on a busy machine.
	var pids []int
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if pids = d.marked(); len(pids) == 0 {
			return
		}
	}
	t.Errorf("processes the drill started are still there: pids %v", pids)
}

// marked returns the processes the drill d started, and d itself: those
// whose environment holds its marker, and those that run in its temporary
// folder (redis-server overwrites its environment with its title). Without
// /proc it returns none.
func (d *drillProc) marked() []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err == nil && bytes.Contains(env, []byte("WALLETLOCK_TEST_MARKER="+d.marker+"\x00")) || strings.HasPrefix(cwd, d.tmp+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitRows waits until the drill has set up its rows and started its
// Redis and its three spenders (the drill itself makes five): its work
// is under way.
func waitRows(t *testing.T, d *drillProc, prefix string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); rowsLeft(t, prefix) == 0 || len(d.marked()) < 5; time.Sleep(50 * time.Millisecond) {
		select {
		case <-d.done:
			t.Fatalf("the drill ended before it set up its rows; stderr:\n%s", d.stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the drill set up no rows within a minute")
		}
	}
}

// `drill | head -2`: the drill's next write after head has gone fails,
// and the drill ends as after Ctrl-C, instead of dying of SIGPIPE with its
// rows, its folder and its processes left behind.
func TestDrill_closedStdoutCleansUp(t *testing.T) {
	prefix, _ := needs(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	d := startDrill(t, w, "-nemesis", "none,pause", "-strategy", "lock,fenced", "-prefix", prefix)
	w.Close()
	sc := bufio.NewScanner(r)
	for range 2 {
		if !sc.Scan() {
			t.Fatalf("the drill printed fewer than 2 lines; stderr:\n%s", d.stderr())
		}
	}
	r.Close() // as head does
	if code := d.exit(t); code != 130 {
		t.Errorf("drill = %d (%v) after its stdout closed, want 130; stderr:\n%s", code, d.cmd.ProcessState, d.stderr())
	}
	if !strings.Contains(d.stderr(), "interrupted by a closed output") {
		t.Errorf("stderr does not say what ended the run:\n%s", d.stderr())
	}
	d.leftNothing(t, prefix)
}

// A closed terminal (SIGHUP) and a supervisor's kill (SIGTERM) end the
// drill as Ctrl-C does.
func TestDrill_hangUpAndTerminateCleanUp(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			prefix, _ := needs(t)
			d := startDrill(t, nil, "-nemesis", "pause", "-strategy", "lock", "-seeds", "5", "-prefix", prefix)
			waitRows(t, d, prefix)
			d.cmd.Process.Signal(sig)
			if code := d.exit(t); code != 130 {
				t.Errorf("drill = %d (%v) after %v, want 130; stderr:\n%s", code, d.cmd.ProcessState, sig, d.stderr())
			}
			d.leftNothing(t, prefix)
		})
	}
}

// A drill killed before its clean-up (SIGKILL: nothing can catch it)
// leaves its rows. A drill on another prefix still runs: its ids are its
// prefix's own. One told to use the dead drill's ids takes its rows over,
// as the dead drill's lease has gone with its connection, and says so in
// one line.
func TestDrill_deadDrillsRowsDoNotBlockAndAreTakenOver(t *testing.T) {
	dead, _ := needs(t)
	d := startDrill(t, nil, "-nemesis", "pause", "-strategy", "lock", "-seeds", "5", "-prefix", dead)
	waitRows(t, d, dead)
	d.cmd.Process.Kill()
	<-d.done
	if rowsLeft(t, dead) == 0 {
		t.Fatal("the killed drill left no rows: nothing to take over")
	}

	other, _ := needs(t)
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-nemesis", "none", "-strategy", "lock", "-prefix", other}, &stdout, &stderr); code != 0 {
		t.Fatalf("a drill on another prefix = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	if strings.Contains(stderr.String(), "took over") {
		t.Errorf("a drill on another prefix took over rows:\n%s", stderr.String())
	}

	stdout.Reset()
	stderr.Reset()
	code := run(t.Context(), []string{"-nemesis", "none", "-strategy", "lock", "-prefix", other,
		"-first-id", fmt.Sprint(drill.FirstID(dead))}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("a drill on the dead drill's ids = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	var took []string
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.Contains(l, "took over") {
			took = append(took, l)
		}
	}
	if len(took) != 1 || !strings.Contains(took[0], fmt.Sprintf("of prefix %q", dead)) {
		t.Errorf("stderr = %q, want one line saying it took over the rows of prefix %q", stderr.String(), dead)
	}
	if n := rowsLeft(t, dead); n != 0 {
		t.Errorf("%d rows of the dead drill left", n)
	}
	if n := rowsLeft(t, other); n != 0 {
		t.Errorf("%d rows of the drill that took over left", n)
	}
}

// Rows that are not provably a dead drill's stay theirs: those of a drill
// that runs (its lease is held), and those outside the ids a drill on
// their prefix derives. The drill refuses them, and deletes none.
func TestDrill_takesOverNoLiveOrForeignRows(t *testing.T) {
	pool := testenv.Postgres(t)
	for _, tt := range []struct {
		name string
		live bool  // the owner's lease is held
		off  int64 // from the owner's derived first id
	}{
		{"a live drill's rows", true, 0},
		{"rows outside the ids a drill derives", false, 1000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			owner, _ := needs(t)
			if tt.live {
				release, err := drill.TakePrefix(t.Context(), pool, owner)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(release)
			}
			id := drill.FirstID(owner) + tt.off
			if _, err := pool.Exec(t.Context(), "INSERT INTO walletlock_wallets (id, balance, owner) VALUES ($1, 5, $2)", id, owner); err != nil {
				t.Fatal(err)
			}
			prefix, _ := needs(t)
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), []string{"-nemesis", "none", "-strategy", "lock", "-wallets", "1",
				"-prefix", prefix, "-first-id", fmt.Sprint(id)}, &stdout, &stderr)
			if code != 1 || !strings.Contains(stderr.String(), "belongs to the run with prefix") || strings.Contains(stderr.String(), "took over") {
				t.Errorf("drill = %d, stderr:\n%s\nwant 1 and the row refused, not taken over", code, stderr.String())
			}
			if n := rowsLeft(t, owner); n != 1 {
				t.Errorf("%d rows of the owner left, want its 1", n)
			}
		})
	}
}

// The drill names itself once, at the start of each line it prints, also
// where it prints an error of package drill, which names the drill too.
func TestDrill_namesItselfOncePerLine(t *testing.T) {
	for _, tt := range []struct {
		name  string
		setUp func(t *testing.T, prefix string)
		args  []string
		code  int
	}{
		{"a prefix another drill holds", func(t *testing.T, prefix string) {
			release, err := drill.TakePrefix(t.Context(), testenv.Postgres(t), prefix)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(release)
		}, []string{"-nemesis", "none"}, 1},
		{"the partition left out", func(t *testing.T, _ string) { withoutIP(t) }, []string{"-nemesis", "partition"}, ExitLeftOut},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prefix, first := needs(t)
			tt.setUp(t, prefix)
			var stdout, stderr bytes.Buffer
			code := run(t.Context(), append(tt.args, "-strategy", "fenced", "-prefix", prefix, "-first-id", first), &stdout, &stderr)
			if code != tt.code {
				t.Errorf("drill = %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			for _, l := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
				if !strings.HasPrefix(l, prog+": ") || strings.HasPrefix(l, prog+": "+prog+": ") || strings.Contains(l, ": "+prog+": ") {
					t.Errorf("line %q, want %q once, at its start", l, prog+": ")
				}
			}
		})
	}
}

// The drill's ids follow from its prefix, in a block of their own, apart
// from step 6's on the same prefix.
func TestFirstID_followsThePrefix(t *testing.T) {
	a, b := drill.FirstID("walletlock:demo:drill:"), drill.FirstID("walletlock:demo:drill:b:")
	if a == b {
		t.Errorf("two prefixes share the first id %d", a)
	}
	if a != drill.FirstID("walletlock:demo:drill:") {
		t.Error("FirstID is not a function of the prefix")
	}
	if s := ledger.FirstIDFor("walletlock:demo:drill:"); a >= s && a < s+ledger.IDBlock {
		t.Errorf("the drill's ids %d.. lie in step 6's block %d.. on the same prefix", a, s)
	}
}

// version takes no lock: its fault note says the spender had read the
// wallet, not that it held it.
func TestDrill_versionNoteNamesNoLock(t *testing.T) {
	prefix, first := needs(t)
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-nemesis", "restart", "-strategy", "version", "-json", "-prefix", prefix, "-first-id", first}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("drill = %d, want 0; stderr:\n%s", code, stderr.String())
	}
	var r struct{ Note string }
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("not one JSON row: %v\n%s", err, stdout.String())
	}
	if !strings.Contains(r.Note, "had read wallet") || strings.Contains(r.Note, "held") || !strings.Contains(r.Note, "takes no lock") {
		t.Errorf("note %q, want it to say the spender had read the wallet and that version takes no lock", r.Note)
	}
}
