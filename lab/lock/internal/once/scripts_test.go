package once

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// Redis requires a script to name in KEYS every key it reads or writes:
// Redis Cluster routes a script by its KEYS, and a key it did not declare
// may live on another node. This test holds every .lua file in the
// module to it: the key of each redis.call and redis.pcall must be
// KEYS[n], or a local bound to KEYS[n] in the script (or, for the fair
// lock, in the queue.lua put in front of it: the files of one folder are
// read as one).
func TestScripts_everyKeyIsDeclaredInKEYS(t *testing.T) {
	root := moduleRoot(t)
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".lua") {
			byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byDir) < 2 {
		t.Fatalf("found .lua files in %d folders under %s, want lock's and more", len(byDir), root)
	}
	for _, files := range byDir {
		var all []string
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, string(b))
		}
		declared := keyLocals(strings.Join(all, "\n"))
		for i, src := range all {
			rel, _ := filepath.Rel(root, files[i])
			for _, c := range calls(src) {
				if c.key == "" {
					continue
				}
				if !keysRef.MatchString(c.key) && !declared[c.key] {
					t.Errorf("%s: redis.call(%q, %s, ...): the key is not KEYS[n] nor bound to one", rel, c.cmd, c.key)
				}
			}
		}
	}
}

// keylessCommands take no key; every other command a script calls has
// its key first.
var keylessCommands = map[string]bool{"TIME": true}

var (
	keysRef   = regexp.MustCompile(`^KEYS\[\d+\]$`)
	callStart = regexp.MustCompile(`redis\.p?call\(`)
	local     = regexp.MustCompile(`(?m)^\s*local\s+([\w\s,]+?)\s*=\s*(.+)$`)
)

// keyLocals returns the locals that a "local a, b = KEYS[1], KEYS[2]"
// binds to a key.
func keyLocals(src string) map[string]bool {
	bound := map[string]bool{}
	for _, m := range local.FindAllStringSubmatch(src, -1) {
		names, values := strings.Split(m[1], ","), strings.Split(m[2], ",")
		for i, n := range names {
			if i < len(values) && keysRef.MatchString(strings.TrimSpace(values[i])) {
				bound[strings.TrimSpace(n)] = true
			}
		}
	}
	return bound
}

type call struct{ cmd, key string }

// calls finds every redis.call and redis.pcall in src, with its command
// (upper case, as written: a command in a variable is refused) and its
// first argument after the command, "" for a keyless command.
func calls(src string) []call {
	var out []call
	for _, loc := range callStart.FindAllStringIndex(src, -1) {
		args := topLevelArgs(src[loc[1]:])
		cmd := strings.ToUpper(strings.Trim(args[0], `"' `))
		c := call{cmd: cmd}
		switch {
		case !strings.HasPrefix(strings.TrimSpace(args[0]), `"`):
			c.key = "(command in a variable: " + args[0] + ")"
		case keylessCommands[cmd]:
		case len(args) < 2:
			c.key = "(none)"
		default:
			c.key = strings.TrimSpace(args[1])
		}
		out = append(out, c)
	}
	return out
}

// topLevelArgs splits the arguments of a call whose text starts just after
// its opening parenthesis.
func topLevelArgs(s string) []string {
	var args []string
	depth, start := 0, 0
	inString := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString != 0:
			if c == inString {
				inString = 0
			}
		case c == '"' || c == '\'':
			inString = c
		case c == '(' || c == '{' || c == '[':
			depth++
		case c == ')' && depth == 0:
			return append(args, s[start:i])
		case c == ')' || c == '}' || c == ']':
			depth--
		case c == ',' && depth == 0:
			args = append(args, s[start:i])
			start = i + 1
		}
	}
	return append(args, s[start:])
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// The checker itself: a script that reaches a key it did not declare is
// caught, as the fair lock's queue.lua once was (it read other fair.Locks'
// presence keys, named by concatenation).
func TestScripts_anUndeclaredKeyIsCaught(t *testing.T) {
	src := `local queue = KEYS[2]
redis.call("EXISTS", queue .. ":" .. fair)
redis.call("GET", KEYS[1])
redis.call(publish, channel, "x")`
	declared := keyLocals(src)
	var bad []string
	for _, c := range calls(src) {
		if c.key != "" && !keysRef.MatchString(c.key) && !declared[c.key] {
			bad = append(bad, c.cmd)
		}
	}
	if len(bad) != 2 {
		t.Errorf("undeclared calls found: %v, want EXISTS and the command in a variable", bad)
	}
}
