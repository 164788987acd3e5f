// TUTORIAL.md (the article's page, about the repository's root) and the
// lab's pages in docs/ are only useful while they tell the truth about the
// code. These tests read them and hold every command and check line they
// show to the programs and to the lesson table, and every quote to the
// source, so a change of behaviour points at the paragraph to update. They
// run in the lab, which holds the apparatus; the pages sit one folder up.
package walletlock_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/lesson"
)

// A command the tutorial shows, with where it stands and the transcript
// (the fenced block that follows it, if it is one of output).
type shownRun struct {
	page       string
	line       int
	step       string
	args       []string
	transcript []numbered
}

type numbered struct {
	n    int
	text string
}

var (
	goRunLine = regexp.MustCompile(`^(?:\$ )?go run (?:-race )?\./cmd/([\w-]+)(.*)$`)
	checkLine = regexp.MustCompile(`accepted=(\d+)(?: unknown=\d+)? balance=(-?\d+) expected=(?:(-?\d+)\.\.)?(-?\d+) (OK|BROKEN)\b`)
	labelled  = regexp.MustCompile(`^\s*(?:phase )?([\w-]+):\s+accepted=`)
	header    = regexp.MustCompile(`^\s*phase (\w+):`)
	drillRun  = regexp.MustCompile(`^([\w-]+)\s+([\w-]+)\s+seed \d+\s+accepted=`) // the drill's line per run: nemesis strategy seed N
	usageFlag = regexp.MustCompile(`^  -([\w-]+)(?: (\w+))?`)
)

// repo is the repository's root, seen from the lab's folder: the pages,
// the root module and the paths quotes name are relative to it.
const repo = ".."

// pages are the files these tests read: the tutorial and its deep dives.
func pages(t *testing.T) []string {
	t.Helper()
	deep, err := filepath.Glob(filepath.Join(repo, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(repo, "TUTORIAL.md")}, deep...)
}

// buildPrograms builds every program of the root module (the steps) and
// of the lab (loadtest, drill, workshop, ...) into dir, with extra build
// flags; their names do not clash.
func buildPrograms(t *testing.T, dir string, flags ...string) {
	t.Helper()
	for _, module := range []string{repo, "."} {
		args := append(append([]string{"build"}, flags...), "-o", dir+string(filepath.Separator), "./cmd/...")
		build := exec.Command("go", args...)
		build.Dir = module
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), module, err, out)
		}
	}
}

// everyPage is what read finds on every page, in the order of pages.
func everyPage[T any](t *testing.T, read func(*testing.T, string) []T) []T {
	t.Helper()
	var all []T
	for _, p := range pages(t) {
		all = append(all, read(t, p)...)
	}
	return all
}

// readTutorial returns the go run commands of every page, each with the
// output block that follows it.
func readTutorial(t *testing.T) []shownRun { return everyPage(t, readRuns) }

// readRuns returns the go run commands of one page, each with the output
// block that follows it.
func readRuns(t *testing.T, page string) []shownRun {
	t.Helper()
	f, err := os.Open(page)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		runs    []shownRun
		inBlock bool
		kind    string // the fence's info string: sh, text, ...
		current *shownRun
		n       int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if !inBlock {
				kind = strings.TrimPrefix(strings.TrimSpace(line), "```")
				// An output block belongs to the last command shown; any
				// other block ends that command's transcript.
				if kind != "text" && kind != "console" && kind != "output" {
					current = nil
				}
			}
			inBlock = !inBlock
			continue
		}
		if !inBlock {
			continue
		}
		if m := goRunLine.FindStringSubmatch(strings.TrimSpace(line)); m != nil && kind != "text" {
			runs = append(runs, shownRun{page: page, line: n, step: m[1], args: strings.Fields(stripComment(m[2]))})
			current = &runs[len(runs)-1]
			continue
		}
		if strings.HasPrefix(line, "$ ") { // another command: its output is not a go run's
			current = nil
			continue
		}
		if current != nil && (kind == "text" || kind == "console" || kind == "output") {
			current.transcript = append(current.transcript, numbered{n, line})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return runs
}

func stripComment(s string) string {
	if i := strings.Index(s, "#"); i >= 0 {
		return s[:i]
	}
	return s
}

// flagsOf builds the programs once and reads each one's flags, with their
// types, from its -h output.
func flagsOf(t *testing.T) map[string]map[string]string {
	t.Helper()
	bin := t.TempDir()
	buildPrograms(t, bin)
	entries, err := os.ReadDir(bin)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]map[string]string{}
	for _, e := range entries {
		cmd := exec.Command(filepath.Join(bin, e.Name()), "-h")
		out, _ := cmd.CombinedOutput() // -h may exit 0 or 2; the usage is what counts
		flags := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if m := usageFlag.FindStringSubmatch(line); m != nil {
				flags[m[1]] = m[2]
			}
		}
		all[e.Name()] = flags
	}
	return all
}

// validValue reports whether v parses as a value of the usage's type word.
func validValue(typ, v string) bool {
	switch typ {
	case "int", "uint":
		_, err := strconv.ParseInt(v, 10, 64)
		return err == nil
	case "float":
		_, err := strconv.ParseFloat(v, 64)
		return err == nil
	case "duration":
		_, err := time.ParseDuration(v)
		return err == nil
	}
	return true
}

func TestTutorial_commandsNameRealProgramsAndFlags(t *testing.T) {
	runs := readTutorial(t)
	if len(runs) == 0 {
		t.Fatal("the pages show no `go run ./cmd/...` command")
	}
	programs := flagsOf(t)
	for _, r := range runs {
		flags, ok := programs[r.step]
		if !ok {
			t.Errorf("%s:%d: go run ./cmd/%s: no such program", r.page, r.line, r.step)
			continue
		}
		for i := 0; i < len(r.args); i++ {
			arg := r.args[i]
			if !strings.HasPrefix(arg, "-") {
				t.Errorf("%s:%d: %s: %q is not a flag", r.page, r.line, r.step, arg)
				continue
			}
			name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
			typ, ok := flags[name]
			if !ok {
				t.Errorf("%s:%d: %s has no flag -%s", r.page, r.line, r.step, name)
				continue
			}
			if typ == "" { // a bool flag takes no separate value
				continue
			}
			if !hasValue {
				if i+1 == len(r.args) {
					t.Errorf("%s:%d: %s -%s needs a value", r.page, r.line, r.step, name)
					continue
				}
				i++
				value = r.args[i]
			}
			if !validValue(typ, value) {
				t.Errorf("%s:%d: %s -%s %s: not a %s", r.page, r.line, r.step, name, value, typ)
			}
		}
	}
}

func TestTutorial_checkLinesMatchTheLesson(t *testing.T) {
	runs := readTutorial(t)
	shown := map[string]bool{}
	for _, r := range runs {
		phase := ""
		for _, l := range r.transcript {
			if m := header.FindStringSubmatch(l.text); m != nil {
				phase = m[1]
			}
			if !strings.Contains(l.text, "accepted=") {
				continue
			}
			m := checkLine.FindStringSubmatch(l.text)
			if m == nil {
				t.Errorf("%s:%d: %q does not have the shape accepted=N balance=N expected=N OK|BROKEN", r.page, l.n, l.text)
				continue
			}
			// The verdict must follow from the numbers, as wallet.Check says.
			// With unknown outcomes, expected is a range LOW..HIGH and the
			// balance must lie in it (the amount decides the steps between,
			// which the line does not show).
			balance, _ := strconv.ParseInt(m[2], 10, 64)
			expected, _ := strconv.ParseInt(m[4], 10, 64)
			low := expected
			if m[3] != "" {
				low, _ = strconv.ParseInt(m[3], 10, 64)
			}
			if ok := low <= balance && balance <= expected && balance >= 0; (m[5] == lesson.OK) != ok {
				t.Errorf("%s:%d: %q: %s does not follow from balance %d and expected %d..%d", r.page, l.n, l.text, m[5], balance, low, expected)
			}
			p := phase
			if lm := labelled.FindStringSubmatch(l.text); lm != nil {
				p = lm[1]
			}
			if dm := drillRun.FindStringSubmatch(l.text); dm != nil && r.step == lesson.DrillStep {
				p = lesson.DrillPhase(dm[1], dm[2])
			}
			if p == "" {
				p = onlyPhase(r.step)
			}
			want, ok := lesson.Lookup(r.step, p)
			if !ok {
				t.Errorf("%s:%d: %s has no phase %q (see package lesson)", r.page, l.n, r.step, p)
				continue
			}
			if m[5] != want.Want {
				t.Errorf("%s:%d: %s phase %s shows %s, but the program gives %s there", r.page, l.n, r.step, p, m[5], want.Want)
			}
			shown[r.step+"/"+p] = true
		}
	}
	// Every phase of every step appears in some transcript.
	for _, p := range lesson.Phases {
		if !shown[p.Step+"/"+p.Phase] {
			t.Errorf("TUTORIAL.md shows no check line for %s phase %s", p.Step, p.Phase)
		}
	}
}

// onlyPhase names the phase of a step that has a single one, "" otherwise.
func onlyPhase(step string) string {
	var name string
	for _, p := range lesson.Phases {
		if p.Step == step {
			if name != "" {
				return ""
			}
			name = p.Phase
		}
	}
	return name
}

// A fenced block of TUTORIAL.md, with the HTML comment that introduces it,
// if any: the last non-blank line before its opening fence.
type fencedBlock struct {
	page   string // the file it is in
	line   int    // of the opening fence
	info   string // the fence's info string: go, lua, console...
	marker string // "<!-- quote: lock/lock.go -->", or ""
	lines  []string
}

// readBlocks returns every fenced block of every page.
func readBlocks(t *testing.T) []fencedBlock { return everyPage(t, readPageBlocks) }

// readPageBlocks returns every fenced block of one page.
func readPageBlocks(t *testing.T, page string) []fencedBlock {
	t.Helper()
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	var (
		blocks  []fencedBlock
		current *fencedBlock
		last    string // the last non-blank line outside a block
	)
	for i, line := range strings.Split(string(raw), "\n") {
		fence := strings.HasPrefix(strings.TrimSpace(line), "```")
		switch {
		case current == nil && fence:
			blocks = append(blocks, fencedBlock{page: page, line: i + 1, info: strings.TrimPrefix(strings.TrimSpace(line), "```")})
			current = &blocks[len(blocks)-1]
			if strings.HasPrefix(last, "<!--") {
				current.marker = last
			}
		case current != nil && fence:
			current = nil
			last = "```"
		case current != nil:
			current.lines = append(current.lines, line)
		case strings.TrimSpace(line) != "":
			last = strings.TrimSpace(line)
		}
	}
	return blocks
}

var quoteMarker = regexp.MustCompile(`^<!-- quote: (\S+) -->$`)

// dedent removes the leading white space that every non-blank line shares,
// and turns lines of white space only into empty ones.
func dedent(lines []string) []string {
	common := ""
	first := true
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		indent := l[:len(l)-len(strings.TrimLeft(l, " \t"))]
		switch {
		case first:
			common, first = indent, false
		default:
			for !strings.HasPrefix(indent, common) {
				common = common[:len(common)-1]
			}
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if strings.TrimSpace(l) != "" {
			out[i] = strings.TrimPrefix(l, common)
		}
	}
	return out
}

// quotedIn reports whether block appears in file as consecutive lines,
// identical once each side loses its common indentation.
func quotedIn(file, block []string) bool {
	want := strings.Join(dedent(block), "\n")
	for i := 0; i+len(block) <= len(file); i++ {
		if strings.Join(dedent(file[i:i+len(block)]), "\n") == want {
			return true
		}
	}
	return false
}

// Code on the page is only worth reading while it is the code that runs:
// every go and lua block names its source in a marker right before it,
// <!-- quote: lock/lock.go -->, and must appear there line for line.
func TestTutorial_quotedCodeMatchesTheSource(t *testing.T) {
	quotes := 0
	for _, b := range readBlocks(t) {
		m := quoteMarker.FindStringSubmatch(b.marker)
		if m == nil {
			if b.info == "go" || b.info == "lua" {
				t.Errorf("%s:%d: a %s block without a <!-- quote: path --> marker before it: name the file it comes from", b.page, b.line, b.info)
			}
			continue
		}
		quotes++
		path := m[1]
		if filepath.IsAbs(path) || strings.Contains(path, "..") {
			t.Errorf("%s:%d: quote: %s: name a file of this repo, relative to its root", b.page, b.line, path)
			continue
		}
		src, err := os.ReadFile(filepath.Join(repo, filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("%s:%d: quote: %v", b.page, b.line, err)
			continue
		}
		if len(b.lines) == 0 {
			t.Errorf("%s:%d: quote of %s is empty", b.page, b.line, path)
			continue
		}
		if !quotedIn(strings.Split(string(src), "\n"), b.lines) {
			t.Errorf("%s:%d: the block quoted from %s is not in it, line for line: copy it again from the source", b.page, b.line, path)
		}
	}
	if quotes == 0 {
		t.Error("TUTORIAL.md quotes no code: no <!-- quote: path --> marker found")
	}
}

func TestQuotedIn(t *testing.T) {
	file := strings.Split("func f() {\n\tif x {\n\t\treturn 1\n\t}\n}", "\n")
	for _, c := range []struct {
		name  string
		block string
		want  bool
	}{
		{"a block indented as in the file is found", "\tif x {\n\t\treturn 1\n\t}", true},
		{"a block with its common indentation removed is found", "if x {\n\treturn 1\n}", true},
		{"a block with spaces for the common indentation is found", "    if x {\n    \treturn 1\n    }", true},
		{"a changed line is not found", "if x {\n\treturn 2\n}", false},
		{"a line left out is not found", "if x {\n}", false},
		{"a line indented differently is not found", "if x {\nreturn 1\n}", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := quotedIn(file, strings.Split(c.block, "\n")); got != c.want {
				t.Errorf("quotedIn = %v, want %v", got, c.want)
			}
		})
	}
}

// The page names the Go version a reader needs; it must be the one go.mod
// asks for.
func TestTutorial_namesTheGoVersionOfGoMod(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join(repo, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	page, err := os.ReadFile(filepath.Join(repo, "TUTORIAL.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Go " + string(m[1]) + " or newer"; !strings.Contains(string(page), want) {
		t.Errorf("TUTORIAL.md does not say %q, as go.mod's go %s line asks", want, m[1])
	}
}

// sessionKey is a word of the redis-cli session that names a key: the
// replay puts a prefix of its own in front of it.
var sessionKey = regexp.MustCompile(`^[\w{}-]+(:[\w{}-]+)+$`)

// shellWords splits a command line as a POSIX shell would for the simple
// cases on the page: words separated by spaces, single or double quotes
// around a word that holds braces or spaces.
func shellWords(s string) []string {
	var (
		words []string
		word  strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			word.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, word.String())
				word.Reset()
				in = false
			}
		default:
			word.WriteRune(r)
			in = true
		}
	}
	if in {
		words = append(words, word.String())
	}
	return words
}

// cliReply prints a reply as redis-cli does in a terminal.
func cliReply(command string, reply any, err error) string {
	switch {
	case err == redis.Nil:
		return "(nil)"
	case err != nil:
		return "(error) " + err.Error()
	}
	switch r := reply.(type) {
	case int64:
		return "(integer) " + strconv.FormatInt(r, 10)
	case string:
		if strings.EqualFold(command, "SET") { // a status reply, not a string
			return r
		}
		return strconv.Quote(r)
	case nil:
		return "(nil)"
	}
	return fmt.Sprint(reply)
}

// Step 2 opens with a redis-cli session on a lock key. This replays it with
// go-redis against the configured Redis, on a prefix of its own, and holds
// every reply to the one shown (a PTTL to any remaining time, since the
// clock has moved). The release runs the very script file the lock embeds.
func TestTutorial_redisCliSessionReplays(t *testing.T) {
	var session *fencedBlock
	for _, b := range readBlocks(t) {
		if b.marker == "<!-- session: redis-cli -->" {
			session = &b
			break
		}
	}
	if session == nil {
		t.Fatal("TUTORIAL.md has no block introduced by <!-- session: redis-cli -->")
	}
	rdb := testenv.Redis(t)
	prefix := labtest.Prefix(t, rdb)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	type step struct {
		line  int
		words []string
		shown []string
	}
	var steps []step
	for i, l := range session.lines {
		n := session.line + 1 + i
		if cmd, ok := strings.CutPrefix(l, "$ redis-cli "); ok {
			steps = append(steps, step{line: n, words: shellWords(cmd)})
			continue
		}
		if len(steps) == 0 {
			t.Fatalf("TUTORIAL.md:%d: the session must start with a `$ redis-cli` line", n)
		}
		steps[len(steps)-1].shown = append(steps[len(steps)-1].shown, l)
	}
	if len(steps) < 5 {
		t.Fatalf("TUTORIAL.md:%d: the session shows %d commands; it should take, try again, ask PTTL and release twice", session.line, len(steps))
	}
	for _, s := range steps {
		words := make([]string, len(s.words))
		for i, w := range s.words {
			words[i] = w
			if i > 0 && sessionKey.MatchString(w) {
				words[i] = prefix + w
			}
		}
		var (
			reply   any
			err     error
			command = strings.ToUpper(words[0])
		)
		if words[0] == "--eval" {
			if len(words) < 2 {
				t.Fatalf("TUTORIAL.md:%d: --eval needs a script file", s.line)
			}
			src, rerr := os.ReadFile(filepath.Join(repo, filepath.FromSlash(words[1])))
			if rerr != nil {
				t.Fatalf("TUTORIAL.md:%d: %v", s.line, rerr)
			}
			keys, argv := words[2:], []string(nil)
			for i, w := range keys {
				if w == "," {
					keys, argv = keys[:i], keys[i+1:]
					break
				}
			}
			args := make([]any, len(argv))
			for i, a := range argv {
				args[i] = a
			}
			reply, err = rdb.Eval(ctx, string(src), keys, args...).Result()
		} else {
			args := make([]any, len(words))
			for i, w := range words {
				args[i] = w
			}
			reply, err = rdb.Do(ctx, args...).Result()
		}
		got := cliReply(command, reply, err)
		shown := strings.Join(s.shown, "\n")
		if command == "PTTL" {
			ms, ok := strings.CutPrefix(shown, "(integer) ")
			if n, perr := strconv.Atoi(ms); !ok || perr != nil || n <= 0 {
				t.Errorf("TUTORIAL.md:%d: PTTL shows %q, want a positive (integer)", s.line, shown)
			}
			if r, ok := reply.(int64); !ok || r <= 0 {
				t.Errorf("TUTORIAL.md:%d: redis-cli %s: got %s, want a positive (integer): the lock should still be held", s.line, strings.Join(s.words, " "), got)
			}
			continue
		}
		if got != shown {
			t.Errorf("TUTORIAL.md:%d: redis-cli %s: the page shows %q, Redis answers %q", s.line, strings.Join(s.words, " "), shown, got)
		}
	}
}

// An ordering the page states about a transcript, written just before it:
// <!-- order: wall: jitter < lockstep < exponential; attempts/spend: jitter < lockstep -->
// Each chain names a column of the transcript's table and rows (by their
// first word) whose values must rise from left to right. The page states
// only orderings that held in every run measured; this holds the
// transcript it shows to them, so that a new run pasted in cannot
// contradict the prose around it.
var orderMarker = regexp.MustCompile(`^<!-- order: (.+) -->$`)

// columnValue returns the value in row of the right-aligned column whose
// header ends at end: the word of row that ends there.
func columnValue(row string, end int) (string, bool) {
	if end > len(row) || (end < len(row) && row[end] != ' ') {
		return "", false
	}
	start := strings.LastIndex(row[:end], " ") + 1
	return row[start:end], start < end
}

// number reads a table cell: a duration (96.2ms, 1.14s) or a number.
func number(cell string) (float64, bool) {
	if d, err := time.ParseDuration(cell); err == nil {
		return float64(d), true
	}
	f, err := strconv.ParseFloat(strings.TrimSuffix(cell, "%"), 64)
	return f, err == nil
}

// tableColumn finds the first header line of lines with column in it and
// returns, for each row under it (up to a blank line), its name and its
// value in that column. A row is named by its first word, or by its first
// two when the first is a number: a sweep's rows start with their worker
// count ("50 fair").
func tableColumn(lines []string, column string) (map[string]float64, bool) {
	for i, h := range lines {
		at := regexp.MustCompile(`(^|\s)` + regexp.QuoteMeta(column) + `(\s{2,}|$)`).FindStringIndex(h)
		if at == nil {
			continue
		}
		end := strings.Index(h[at[0]:], column) + at[0] + len(column)
		values := map[string]float64{}
		for _, row := range lines[i+1:] {
			if strings.TrimSpace(row) == "" {
				break
			}
			cell, ok := columnValue(row, end)
			if !ok {
				continue
			}
			if v, ok := number(cell); ok {
				values[rowName(row)] = v
			}
		}
		return values, true
	}
	return nil, false
}

// rowName is how an order comment names row: its first word, or its
// first two when the first is a number.
func rowName(row string) string {
	f := strings.Fields(row)
	if _, err := strconv.Atoi(f[0]); err == nil && len(f) > 1 {
		return f[0] + " " + f[1]
	}
	return f[0]
}

func TestTutorial_statedOrderingsHoldInTheTranscripts(t *testing.T) {
	blocks := readBlocks(t)
	n := 0
	for _, b := range blocks {
		m := orderMarker.FindStringSubmatch(b.marker)
		if m == nil {
			continue
		}
		for _, chain := range strings.Split(m[1], ";") {
			column, order, ok := strings.Cut(chain, ": ")
			column = strings.TrimSpace(column)
			if !ok {
				t.Errorf("%s:%d: order %q: want COLUMN: row < row ...", b.page, b.line, chain)
				continue
			}
			values, found := tableColumn(b.lines, column)
			if !found {
				t.Errorf("%s:%d: the transcript has no column %q", b.page, b.line, column)
				continue
			}
			rows := strings.Split(order, "<")
			for i := range rows {
				rows[i] = strings.TrimSpace(rows[i])
				if _, ok := values[rows[i]]; !ok {
					t.Errorf("%s:%d: column %q has no value for %q", b.page, b.line, column, rows[i])
				}
			}
			for i := 1; i < len(rows); i++ {
				n++
				if a, b2 := values[rows[i-1]], values[rows[i]]; a >= b2 {
					t.Errorf("%s:%d: the page says %s: %s < %s, the transcript shows %v and %v", b.page, b.line, column, rows[i-1], rows[i], a, b2)
				}
			}
		}
	}
	if n == 0 {
		t.Skip("no page states an <!-- order: ... --> before a transcript")
	}
}

func TestShellWords(t *testing.T) {
	got := shellWords(`--eval lock/release.lua 'a:{wallet:42}' , tok-bob "x y"`)
	want := []string{"--eval", "lock/release.lua", "a:{wallet:42}", ",", "tok-bob", "x y"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
}

func TestTableColumn(t *testing.T) {
	table := strings.Split(strings.TrimPrefix(`
strategy   retry             wall  wait p99
lockstep   Linear(10ms)   347.9ms   333.5ms
jitter     Jitter{5, 15}   86.2ms    83.0ms

other      header          wall
lockstep   x                   1`, "\n"), "\n")
	sweep := strings.Split(strings.TrimPrefix(`
  workers  strategy   wait p99
        8  lock        485.6ms
        8  fair         21.7ms
       50  fair        121.2ms`, "\n"), "\n")
	for _, c := range []struct {
		column string
		want   map[string]float64
	}{
		{"wall", map[string]float64{"lockstep": float64(347900 * time.Microsecond), "jitter": float64(86200 * time.Microsecond)}},
		{"wait p99", map[string]float64{"lockstep": float64(333500 * time.Microsecond), "jitter": float64(83 * time.Millisecond)}},
	} {
		t.Run("the rows under the first header with "+c.column, func(t *testing.T) {
			got, ok := tableColumn(table, c.column)
			if !ok || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("tableColumn(%q) = %v, %v; want %v", c.column, got, ok, c.want)
			}
		})
	}
	t.Run("a sweep's rows named by worker count and strategy", func(t *testing.T) {
		want := map[string]float64{"8 lock": float64(485600 * time.Microsecond), "8 fair": float64(21700 * time.Microsecond), "50 fair": float64(121200 * time.Microsecond)}
		got, ok := tableColumn(sweep, "wait p99")
		if !ok || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("tableColumn(sweep, wait p99) = %v, %v; want %v", got, ok, want)
		}
	})
}

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// other than hyphens and underscores dropped, spaces as hyphens.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// headings returns the anchors of a page's headings.
func headings(t *testing.T, page string) map[string]bool {
	t.Helper()
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(string(raw), "\n") {
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
		}
		if !inFence && strings.HasPrefix(line, "#") {
			found[anchor(strings.TrimSpace(strings.TrimLeft(line, "#")))] = true
		}
	}
	return found
}

var mdLink = regexp.MustCompile(`\]\(([^)#\s]*)(?:#([^)\s]+))?\)`)

// Every link from one page to another, or to a section, [text](#fragment)
// or [text](docs/drills.md#fragment), in the tutorial, its deep dives and
// README.md, reaches a file of the repo and a heading in it: a page or a
// section renamed must not leave its links dangling.
func TestTutorial_linksReachAHeading(t *testing.T) {
	for _, page := range append(pages(t), filepath.Join(repo, "README.md")) {
		raw, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(raw), -1) {
			target, frag := m[1], m[2]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file := page
			if target != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(target))
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s links to %s, which is not a file of this repo", page, target)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if !headings(t, file)[frag] {
				t.Errorf("%s links to %s#%s, which no heading gives", page, file, frag)
			}
		}
	}
}

func TestAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Step 6: every strategy under load, `cmd/step6-loadtest`": "step-6-every-strategy-under-load-cmdstep6-loadtest",
		"`make up` in detail": "make-up-in-detail",
		"Going deeper: flags, bounds and a run that owns its keys": "going-deeper-flags-bounds-and-a-run-that-owns-its-keys",
	} {
		if got := anchor(heading); got != want {
			t.Errorf("anchor(%q) = %q, want %q", heading, got, want)
		}
	}
}
