// The transcripts on the pages are real runs, and they stay real: a
// command introduced by <!-- transcript --> is run again here, on a Redis,
// a PostgreSQL and three Redlock nodes of the test's own, from the
// repository's root, and `make transcripts`, which is
//
//	cd lab && go test -count=1 -timeout 30m -run TestTutorial_transcripts -update .
//
// writes what it printed into the block after it. Without -update the test
// fails when a block's tables or check lines no longer have the columns
// and keys the program prints now. With -orderings N it runs every command
// whose block states an ordering (<!-- order: ... -->) N times and fails
// unless each ordering held every time; -hog keeps every core busy
// meanwhile, as on a shared machine:
//
//	go test -count=1 -run TestTutorial_orderings -orderings 10 -hog -timeout 60m .
package walletlock_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/launch"
)

var (
	update    = flag.Bool("update", false, "write the programs' output into the transcripts of TUTORIAL.md and docs/")
	orderings = flag.Int("orderings", 0, "run each command whose transcript states an ordering this many times, and check the ordering every time")
	hog       = flag.Bool("hog", false, "with -orderings: keep every core busy with a spinning goroutine while the programs run")
)

// A transcript: a command block introduced by <!-- transcript --> (or
// <!-- transcript: FILTER -->) and the output block right after it.
type transcript struct {
	page   string
	cmd    fencedBlock
	out    fencedBlock
	filter string
	race   bool
	step   string
	args   []string
}

var transcriptMarker = regexp.MustCompile(`^<!-- transcript(?:: (\S+))? -->$`)

func readTranscripts(t *testing.T) []transcript {
	t.Helper()
	var all []transcript
	for _, page := range pages(t) {
		blocks := readPageBlocks(t, page)
		for i, b := range blocks {
			m := transcriptMarker.FindStringSubmatch(b.marker)
			if m == nil {
				continue
			}
			if _, ok := filters[m[1]]; !ok {
				t.Errorf("%s:%d: transcript filter %q: no such filter (see filters in tutorial_transcripts_test.go)", page, b.line, m[1])
				continue
			}
			var cmds []string
			for _, l := range b.lines {
				if strings.TrimSpace(l) != "" {
					cmds = append(cmds, strings.TrimPrefix(strings.TrimSpace(l), "$ "))
				}
			}
			if len(cmds) != 1 {
				t.Errorf("%s:%d: a transcript's block holds one command, not %d", page, b.line, len(cmds))
				continue
			}
			g := goRunLine.FindStringSubmatch(cmds[0])
			if g == nil || i+1 == len(blocks) || blocks[i+1].info != "text" {
				t.Errorf("%s:%d: a transcript is one `go run ./cmd/...` line followed by a text block", page, b.line)
				continue
			}
			all = append(all, transcript{
				page: page, cmd: b, out: blocks[i+1], filter: m[1],
				race: strings.Contains(cmds[0], "go run -race "),
				step: g[1], args: strings.Fields(stripComment(g[2])),
			})
		}
	}
	if len(all) == 0 {
		t.Fatal("no <!-- transcript --> marker on any page")
	}
	return all
}

// filters cut a program's output to what a page shows. Each keeps real
// lines (the step 6 one only keeps some columns of its first table) and
// says so in its marker, so a reader knows the block is a cut.
var filters = map[string]func([]string) []string{
	"":      func(l []string) []string { return l },
	"step6": step6Main,
	"sweep": checksAndFirstTable,
}

// step6Main keeps step 6's first line, its first table with the columns
// the tutorial explains, and the check lines.
func step6Main(lines []string) []string {
	return keepTable(lines, []string{"strategy", "accepted/s", "wait p50", "wait p99", "verdict"})
}

// checksAndFirstTable keeps the first table whole and the check lines.
func checksAndFirstTable(lines []string) []string { return keepTable(lines, nil) }

// keepTable keeps the lines before the first table, that table (cut to
// columns, when given), and the check lines.
func keepTable(lines []string, columns []string) []string {
	var out []string
	i := 0
	for ; i < len(lines) && !isHeader(lines, i); i++ {
		out = append(out, lines[i])
	}
	if i < len(lines) {
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "" {
			end++
		}
		if columns == nil {
			out = append(out, lines[i:end]...)
		} else {
			out = append(out, cutColumns(lines[i:end], columns)...)
		}
		i = end
	}
	checks := false
	for ; i < len(lines); i++ {
		if strings.Contains(lines[i], "accepted=") {
			if !checks {
				out = append(out, "")
				checks = true
			}
			out = append(out, lines[i])
		}
	}
	return out
}

// headerCells splits a table's header into its column names (separated by
// two spaces or more) with where each starts and ends.
func headerCells(h string) (names []string, starts, ends []int) {
	for _, loc := range regexp.MustCompile(`\S+(?: \S+)*`).FindAllStringIndex(h, -1) {
		names = append(names, h[loc[0]:loc[1]])
		starts = append(starts, loc[0])
		ends = append(ends, loc[1])
	}
	return names, starts, ends
}

// cutColumns re-draws a table with the named columns only: the first
// column and the last (a verdict) left-aligned as the program draws them,
// the others right-aligned.
func cutColumns(table []string, columns []string) []string {
	names, starts, ends := headerCells(table[0])
	index := map[string]int{}
	for i, n := range names {
		index[n] = i
	}
	var rows [][]string
	for r, row := range table {
		var cells []string
		for _, c := range columns {
			i, ok := index[c]
			if !ok {
				return table // the program changed: the shape check says so
			}
			var cell string
			switch {
			case r == 0:
				cell = c
			case i == 0:
				cell = strings.Fields(row)[0]
			case i == len(names)-1:
				if starts[i] < len(row) {
					cell = strings.TrimSpace(row[starts[i]:])
				}
			default:
				cell, _ = columnValue(row, ends[i])
			}
			cells = append(cells, cell)
		}
		rows = append(rows, cells)
	}
	widths := make([]int, len(columns))
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len(c))
		}
	}
	indent := table[0][:len(table[0])-len(strings.TrimLeft(table[0], " "))]
	var out []string
	for _, r := range rows {
		var b strings.Builder
		b.WriteString(indent)
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			if i == 0 || i == len(r)-1 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				fmt.Fprintf(&b, "%*s", widths[i], c)
			}
		}
		out = append(out, strings.TrimRight(b.String(), " "))
	}
	return out
}

// isHeader reports whether lines[i] is a table's header: three or more
// column names, none of them a number, with a row right under it.
func isHeader(lines []string, i int) bool {
	if i+1 >= len(lines) || strings.TrimSpace(lines[i+1]) == "" || strings.Contains(lines[i], "=") {
		return false
	}
	names, _, _ := headerCells(lines[i])
	if len(names) < 3 {
		return false
	}
	for _, n := range names {
		if _, ok := number(n); ok {
			return false
		}
	}
	return true
}

var (
	checkKey = regexp.MustCompile(`\b([a-z]+)=`)
	stepLog  = regexp.MustCompile(`^(step\d-[\w-]+: [^:]+):`) // a step's log line: "step3-ttl: release: lock: not held ..."
)

// shape is what a transcript must keep in common with a fresh run: its
// tables' headers, for each check line its label and keys, and, for each
// line a step logs on stderr, its program and what it is about, so that a
// page shows every line a terminal does.
func shape(lines []string) []string {
	var s []string
	for i, l := range lines {
		switch {
		case stepLog.MatchString(l):
			s = append(s, "log: "+stepLog.FindStringSubmatch(l)[1])
		case isHeader(lines, i):
			names, _, _ := headerCells(l)
			s = append(s, "table: "+strings.Join(names, " | "))
		case strings.Contains(l, "accepted="):
			label := ""
			if m := labelled.FindStringSubmatch(l); m != nil {
				label = m[1] + ": "
			}
			var keys []string
			for _, m := range checkKey.FindAllStringSubmatch(l, -1) {
				keys = append(keys, m[1])
			}
			s = append(s, "check: "+label+strings.Join(keys, " "))
		}
	}
	return s
}

// ownServices: startServices starts the servers the programs run against, of the test's
// own, and builds the programs; run runs one with them.
type ownServices struct {
	bin, raceBin string
	once         sync.Once
}

func startServices(t *testing.T) *ownServices {
	t.Helper()
	if testing.Short() {
		t.Skip("runs every program the pages show: not with -short")
	}
	labtest.StartRedis(t).Use(t)
	startPostgres(t)
	var nodes []string
	for range 3 {
		nodes = append(nodes, labtest.StartRedis(t).Addr)
	}
	t.Setenv("REDLOCK_ADDRS", strings.Join(nodes, ","))
	s := &ownServices{bin: t.TempDir()}
	buildPrograms(t, s.bin)
	return s
}

// startPostgres starts a PostgreSQL of the test's own with a database
// walletlock, points DATABASE_URL at it, and stops it when the test ends.
// A test running as root runs it as the user postgres.
func startPostgres(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var g launch.Group
	srv, err := g.StartPostgres(ctx, "walletlock")
	if errors.Is(err, launch.ErrNoPostgres) {
		testenv.Missing(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.Close() // a clean shutdown first
		g.KillAll(10 * time.Second)
		if t.Failed() {
			t.Logf("PostgreSQL's output:\n%s", srv.Log)
		}
	})
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE walletlock"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DATABASE_URL", srv.URL("walletlock"))
}

// run runs the transcript's command and returns what it printed, as a
// terminal shows it (stdout and stderr together), through its filter.
func (s *ownServices) run(t *testing.T, tr transcript) []string {
	t.Helper()
	bin := s.bin
	if tr.race {
		s.once.Do(func() {
			s.raceBin = t.TempDir()
			buildPrograms(t, s.raceBin, "-race")
		})
		bin = s.raceBin
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, filepath.Join(bin, tr.step), tr.args...)
	cmd.Dir = repo // as the page says: from the repository's root
	cmd.Stdout, cmd.Stderr = &out, &out
	dieWithTest(cmd)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() == 2) {
		t.Fatalf("%s:%d: go run ./cmd/%s %s: %v\n%s", tr.page, tr.cmd.line, tr.step, strings.Join(tr.args, " "), err, out.String())
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	return filters[tr.filter](lines)
}

// orderMarkerOf returns the ordering stated before a transcript's output.
func orderMarkerOf(tr transcript) string {
	if m := orderMarker.FindStringSubmatch(tr.out.marker); m != nil {
		return m[1]
	}
	return ""
}

// failedOrderings returns each link of the chains of order that lines
// break ("wait p99: fair < lock (32ms >= 20ms)"), and every link checked.
func failedOrderings(order string, lines []string) (failed, links []string) {
	for _, chain := range strings.Split(order, ";") {
		column, rowsText, ok := strings.Cut(chain, ": ")
		if !ok {
			failed = append(failed, "bad chain "+chain)
			continue
		}
		column = strings.TrimSpace(column)
		values, _ := tableColumn(lines, column)
		rows := strings.Split(rowsText, "<")
		for i := range rows {
			rows[i] = strings.TrimSpace(rows[i])
		}
		for i := 1; i < len(rows); i++ {
			link := fmt.Sprintf("%s: %s < %s", column, rows[i-1], rows[i])
			links = append(links, link)
			a, okA := values[rows[i-1]]
			b, okB := values[rows[i]]
			if !okA || !okB || a >= b {
				failed = append(failed, fmt.Sprintf("%s (%v, %v)", link, a, b))
			}
		}
	}
	return failed, links
}

func TestTutorial_transcripts(t *testing.T) {
	trs := readTranscripts(t)
	s := startServices(t)
	edits := map[string][]edit{}
	printed := map[string][]string{} // by program, every line it printed here
	for _, tr := range trs {
		fresh := s.run(t, tr)
		printed[tr.step] = append(append(printed[tr.step], fresh...), "")
		if *update {
			// A stated ordering must hold in what is written under it: a
			// run where it did not is run again (it held in every run
			// measured under load, so this is rare).
			for try := 0; try < 4 && orderMarkerOf(tr) != ""; try++ {
				failed, _ := failedOrderings(orderMarkerOf(tr), fresh)
				if len(failed) == 0 {
					break
				}
				t.Logf("%s:%d: orderings broken in this run, running it again: %v", tr.page, tr.out.line, failed)
				fresh = s.run(t, tr)
			}
			edits[tr.page] = append(edits[tr.page], edit{tr.out.line, len(tr.out.lines), fresh})
			continue
		}
		if got, want := strings.Join(shape(tr.out.lines), "\n"), strings.Join(shape(fresh), "\n"); got != want {
			t.Errorf("%s:%d: the transcript of go run ./cmd/%s %s is not what the program prints now:\n--- on the page\n%s\n--- now\n%s\nrun: make transcripts",
				tr.page, tr.out.line, tr.step, strings.Join(tr.args, " "), got, want)
		}
	}
	for page, es := range edits {
		rewrite(t, page, es)
	}
	if !*update {
		byHandKeepTheColumns(t, trs, printed)
	}
}

// optionalColumns are columns a program prints only for some runs: a
// sweep's worker count, the pool's wait where the pool was the limit.
var optionalColumns = map[string]bool{"workers": true, "pool p50": true, "pool p99": true}

func columnsOf(header string) string {
	names, _, _ := headerCells(header)
	var kept []string
	for _, n := range names {
		if !optionalColumns[n] {
			kept = append(kept, n)
		}
	}
	return strings.Join(kept, " | ")
}

// byHandKeepTheColumns holds the transcripts that need a fault set up by
// hand, and so are not run again, to the programs as they print now:
// every table in one must have the columns of a table the same program
// printed in this test's runs (a sweep's and the pool's columns aside).
func byHandKeepTheColumns(t *testing.T, trs []transcript, fresh map[string][]string) {
	t.Helper()
	marked := map[string]bool{}
	for _, tr := range trs {
		marked[fmt.Sprintf("%s:%d", tr.page, tr.out.line)] = true
	}
	known := map[string]map[string]bool{}
	for step, lines := range fresh {
		known[step] = map[string]bool{}
		for i, l := range lines {
			if isHeader(lines, i) {
				known[step][columnsOf(l)] = true
			}
		}
	}
	command := regexp.MustCompile(`go run (?:-race )?\./cmd/([\w-]+)`)
	for _, page := range pages(t) {
		step := ""
		for _, b := range readPageBlocks(t, page) {
			if b.info != "text" {
				step = ""
				for _, l := range b.lines {
					if m := command.FindStringSubmatch(l); m != nil {
						step = m[1]
					}
				}
				continue
			}
			// Only the text block right after a command is its output; a
			// later one is a drawing or a table of the page's own.
			prog := step
			step = ""
			if prog == "" || known[prog] == nil || marked[fmt.Sprintf("%s:%d", page, b.line)] {
				continue
			}
			for i, l := range b.lines {
				if isHeader(b.lines, i) && !known[prog][columnsOf(l)] {
					t.Errorf("%s:%d: a table of %s with the columns %q, which it no longer prints: run the command again and paste its output", page, b.line+1+i, prog, columnsOf(l))
				}
			}
		}
	}
}

// An edit replaces the n lines after the opening fence at line with lines.
type edit struct {
	line, n int
	lines   []string
}

func rewrite(t *testing.T, page string, es []edit) {
	t.Helper()
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	sort.Slice(es, func(i, j int) bool { return es[i].line > es[j].line })
	for _, e := range es {
		tail := append([]string(nil), lines[e.line+e.n:]...)
		lines = append(append(lines[:e.line], e.lines...), tail...)
	}
	if err := os.WriteFile(page, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d transcripts written", page, len(es))
}

func TestTutorial_orderings(t *testing.T) {
	if *orderings == 0 {
		t.Skip("run with -orderings N (and -hog for a busy machine) to run every stated ordering N times")
	}
	var ordered []transcript
	for _, tr := range readTranscripts(t) {
		if orderMarkerOf(tr) != "" {
			ordered = append(ordered, tr)
		}
	}
	if len(ordered) == 0 {
		t.Fatal("no transcript states an ordering")
	}
	s := startServices(t)
	if *hog {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		for range runtime.NumCPU() {
			go func() {
				for n := 0; ctx.Err() == nil; n++ {
				}
			}()
		}
	}
	for _, tr := range ordered {
		broke := map[string]int{}
		var links []string
		for range *orderings {
			failed, all := failedOrderings(orderMarkerOf(tr), s.run(t, tr))
			links = all
			for _, f := range failed {
				broke[f[:strings.Index(f+" (", " (")]]++
				t.Logf("%s:%d: broken: %s", tr.page, tr.out.line, f)
			}
		}
		for _, l := range links {
			if broke[l] > 0 {
				t.Errorf("%s:%d: %s held in %d of %d runs", tr.page, tr.out.line, l, *orderings-broke[l], *orderings)
			} else {
				t.Logf("%s:%d: %s held in %d of %d runs", tr.page, tr.out.line, l, *orderings, *orderings)
			}
		}
	}
}

func TestCutColumns(t *testing.T) {
	table := []string{
		"  strategy   accepted/s  attempts  wait p50  wait p99  verdict",
		"  none            25040     25111       n/a       n/a  BROKEN: 16 wallets off by 190,240",
		"  redislock        4191      9090   0.383ms   101.8ms  OK",
	}
	got := strings.Join(cutColumns(table, []string{"strategy", "accepted/s", "wait p99", "verdict"}), "\n")
	want := strings.Join([]string{
		"  strategy   accepted/s  wait p99  verdict",
		"  none            25040       n/a  BROKEN: 16 wallets off by 190,240",
		"  redislock        4191   101.8ms  OK",
	}, "\n")
	if got != want {
		t.Errorf("cutColumns:\n%s\nwant:\n%s", got, want)
	}
}

// A transcript that leaves out a line a step logs on stderr (step 3's
// releases of a lease that had passed on) is told apart from the run, whose
// numbers may differ.
func TestShape_tellsAMissingLogLineApart(t *testing.T) {
	page := []string{
		"phase 1: accepted=3 balance=80 expected=70 BROKEN",
		"step3-ttl: phase 3: spends that failed: 1, the first with: wallet: stopped before the write",
	}
	run := []string{
		"step3-ttl: release: lock: not held (expired, or taken by someone else)",
		"phase 1: accepted=3 balance=70 expected=70 OK",
		"step3-ttl: phase 3: spends that failed: 1, the first with: wallet: stopped before the write",
	}
	if a, b := strings.Join(shape(page), "\n"), strings.Join(shape(run), "\n"); a == b {
		t.Errorf("shape does not tell a transcript without the release line from the run:\n%s", a)
	}
	if a, b := strings.Join(shape(run[1:]), "\n"), strings.Join(shape(page), "\n"); a != b {
		t.Errorf("shape tells the same lines apart by their numbers:\n%s\n---\n%s", a, b)
	}
}

// A table pasted before a column was added is told apart from the one the
// program prints now; a sweep's worker column does not count.
func TestShape_tellsAStaleTableApart(t *testing.T) {
	old := []string{
		"  strategy   accepted/s  attempts  redis/spend  verdict",
		"  lock              609      2653         6.98  OK",
		"",
		"lock:       accepted=1827 balance=10 expected=10 OK",
	}
	now := []string{
		"  strategy   accepted/s  attempts  redis/spend  calls/spend  verdict",
		"  lock              526      4831         7.00         4.78  OK",
		"",
		"lock:       accepted=3160 balance=10 expected=10 OK linearizable=yes",
	}
	if a, b := strings.Join(shape(old), "\n"), strings.Join(shape(now), "\n"); a == b {
		t.Errorf("shape does not tell a table without calls/spend, and a check line without linearizable=, from the one printed now:\n%s", a)
	}
	sweep := "  workers  strategy   accepted/s  attempts  redis/spend  calls/spend  verdict"
	if columnsOf(sweep) != columnsOf(now[0]) {
		t.Errorf("columnsOf(sweep) = %q, want %q", columnsOf(sweep), columnsOf(now[0]))
	}
	if columnsOf(old[0]) == columnsOf(now[0]) {
		t.Error("columnsOf does not tell the stale header apart")
	}
}
