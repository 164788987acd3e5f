// TUTORIAL.md is only useful while it tells the truth about the code. This
// test reads it and holds every command and every check line it shows to
// the programs and to the lesson table, so a change of behaviour points at
// the paragraph to update.
package walletlock_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/lesson"
)

// A command the tutorial shows, with where it stands and the transcript
// (the fenced block that follows it, if it is one of output).
type shownRun struct {
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
	usageFlag = regexp.MustCompile(`^  -([\w-]+)(?: (\w+))?`)
)

// readTutorial returns the go run commands of TUTORIAL.md, each with the
// output block that follows it.
func readTutorial(t *testing.T) []shownRun {
	t.Helper()
	f, err := os.Open("TUTORIAL.md")
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
			runs = append(runs, shownRun{line: n, step: m[1], args: strings.Fields(stripComment(m[2]))})
			current = &runs[len(runs)-1]
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
	// go test puts its own GOROOT/bin first on PATH, so "go" is the
	// toolchain running this test.
	build := exec.Command("go", "build", "-o", bin+string(filepath.Separator), "./cmd/...")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/...: %v\n%s", err, out)
	}
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
		t.Fatal("TUTORIAL.md shows no `go run ./cmd/...` command")
	}
	programs := flagsOf(t)
	for _, r := range runs {
		flags, ok := programs[r.step]
		if !ok {
			t.Errorf("TUTORIAL.md:%d: go run ./cmd/%s: no such program", r.line, r.step)
			continue
		}
		for i := 0; i < len(r.args); i++ {
			arg := r.args[i]
			if !strings.HasPrefix(arg, "-") {
				t.Errorf("TUTORIAL.md:%d: %s: %q is not a flag", r.line, r.step, arg)
				continue
			}
			name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
			typ, ok := flags[name]
			if !ok {
				t.Errorf("TUTORIAL.md:%d: %s has no flag -%s", r.line, r.step, name)
				continue
			}
			if typ == "" { // a bool flag takes no separate value
				continue
			}
			if !hasValue {
				if i+1 == len(r.args) {
					t.Errorf("TUTORIAL.md:%d: %s -%s needs a value", r.line, r.step, name)
					continue
				}
				i++
				value = r.args[i]
			}
			if !validValue(typ, value) {
				t.Errorf("TUTORIAL.md:%d: %s -%s %s: not a %s", r.line, r.step, name, value, typ)
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
				t.Errorf("TUTORIAL.md:%d: %q does not have the shape accepted=N balance=N expected=N OK|BROKEN", l.n, l.text)
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
				t.Errorf("TUTORIAL.md:%d: %q: %s does not follow from balance %d and expected %d..%d", l.n, l.text, m[5], balance, low, expected)
			}
			p := phase
			if lm := labelled.FindStringSubmatch(l.text); lm != nil {
				p = lm[1]
			}
			if p == "" {
				p = onlyPhase(r.step)
			}
			want, ok := lesson.Lookup(r.step, p)
			if !ok {
				t.Errorf("TUTORIAL.md:%d: %s has no phase %q (see package lesson)", l.n, r.step, p)
				continue
			}
			if m[5] != want.Want {
				t.Errorf("TUTORIAL.md:%d: %s phase %s shows %s, but the program gives %s there", l.n, r.step, p, m[5], want.Want)
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
