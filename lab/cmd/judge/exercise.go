package main

// make exercise STEP=N: the root's lock/ with step N's functions turned
// into stubs, for a learner to write them before reading them. Everything
// still builds; `make judge STEP=N` says what the learner's version does.

import (
	"bytes"
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/lockbuild"
)

// stub is one function to take out: its file, and the body a learner
// starts from.
type stub struct {
	file, fn, body string
}

// exercises are step N's functions and scripts.
var exercises = map[int]struct {
	stubs   []stub
	scripts map[string]string // .lua file -> what it must do
}{
	2: {stubs: []stub{
		{"lock.go", "Acquire", `// TODO(step 2): refuse a ttl under 1ms (ErrBadTTL) before any call.
	// Take a new random token (rand.Text), then try SET key token NX PX ttl
	// (rdb.SetNX) until it succeeds, waiting a few ms between tries (pause)
	// and giving up when ctx ends (failed says why).
	return nil, fmt.Errorf("lock: Acquire is yours to write (step 2), see the TODO in lock.go")`},
		{"lock.go", "Release", `// TODO(step 2): delete the key only while it holds l.Token, in one step:
	// run releaseScript (release.lua) with the key and the token. A reply of
	// 0 is ErrNotHeld; an error is an unknown outcome, never ErrNotHeld.
	//
	// Client is narrow on purpose: SetNX and scripts (redis.Scripter), no
	// GET and no DEL. To GET the token, compare it here and then DEL is to
	// widen Client and send two commands: a check, then an act. A holder
	// that stops between them (a pause, a slow network) past its TTL
	// deletes the lease of whoever took the lock meanwhile. make judge
	// STEP=2 stops your Release between every two of its commands, and
	// says so if it does.
	_ = releaseScript // yours to run
	return fmt.Errorf("lock: Release is yours to write (step 2), see the TODO in lock.go")`},
	}, scripts: map[string]string{"release.lua": "if the key holds ARGV[1], delete it and return 1; else return 0"}},
	3: {stubs: []stub{
		{"watch.go", "Refresh", `// TODO(step 3): refuse a ttl under 1ms (ErrBadTTL); then run
	// refreshScript (refresh.lua): set the TTL again only while the key
	// holds l.Token. 0 is ErrNotHeld: never create the key again. As with
	// Release, a GET then a PEXPIRE is a check and an act in two commands:
	// make judge STEP=3 stops a Refresh between them.
	_ = refreshScript // yours to run
	return fmt.Errorf("lock: Refresh is yours to write (step 3), see the TODO in watch.go")`},
		{"watch.go", "Watch", `// TODO(step 3): return a context derived from parent that a goroutine
	// cancels, with the reason as its cause, as soon as a Refresh (every
	// ttl/3, each bounded by ttl/3) fails; and a stop function that ends it.
	// A ttl under 1ms: cancel at once with ErrBadTTL, start nothing.
	ctx, cancel := context.WithCancelCause(parent)
	cancel(fmt.Errorf("lock: Watch is yours to write (step 3), see the TODO in watch.go"))
	return ctx, func() { cancel(context.Canceled) }`},
	}, scripts: map[string]string{"refresh.lua": "if the key holds ARGV[1], PEXPIRE it to ARGV[2] and return 1; else return 0"}},
	5: {stubs: []stub{
		{"fence.go", "AcquireFenced", `// TODO(step 5): Acquire, but each try runs acquireFencedScript
	// (acquire_fenced.lua) on key and fenceKey: it takes the lock and the
	// next number of the fence counter in one step. Return the Lock with
	// its Fence set. (SET NX and then INCR from Go would be two commands: a
	// holder that stops between them comes back with a fence above the
	// live holder's; make judge STEP=5 stops it there.)
	_ = acquireFencedScript // yours to run
	return nil, fmt.Errorf("lock: AcquireFenced is yours to write (step 5), see the TODO in fence.go")`},
	}, scripts: map[string]string{"acquire_fenced.lua": "SET KEYS[1] ARGV[1] NX PX ARGV[2]; if it was set, return INCR KEYS[2] (and if INCR fails, DEL KEYS[1] and return the error: a failed call holds nothing); else return 0"}},
}

// exercise stubs the functions of the step stepArg names (2, 3 or 5) in
// root's lock/, and says what it did and how to get the originals back.
// It changes nothing unless the root module builds before and after: a
// compile error of the learner's own is named as such, and lock/ is left
// as it was.
func exercise(ctx context.Context, root, stepArg string) (string, error) {
	step, err := strconv.Atoi(stepArg)
	ex, ok := exercises[step]
	if err != nil || !ok {
		// make exercise with no STEP= gives an empty one: ask for it,
		// never judge instead.
		what := "say which step's exercise"
		if stepArg != "" {
			what = "STEP=" + safe.Quote(stepArg) + " has no exercise"
		}
		return "", lockbuild.Refuse(fmt.Errorf("judge: %s: STEP=2, 3 or 5, e.g. make exercise STEP=2", what))
	}
	dir := filepath.Join(root, "lock")
	git := exec.CommandContext(ctx, "git", "status", "--porcelain", "--", ".")
	git.Dir = dir
	out, err := git.Output()
	if err != nil {
		return "", fmt.Errorf("judge: the exercise needs lock/ in a git checkout, so that `git restore lock/` brings the originals back: %v", err)
	}
	if len(bytes.TrimSpace(out)) > 0 {
		return "", fmt.Errorf("judge: lock/ has changes of yours (git status lock/); commit or stash them first, so that git restore can bring the originals back without losing them")
	}
	if out, err := goBuild(ctx, root); err != nil {
		return "", fmt.Errorf("judge: the root module does not build, before any stub: %s; fix that first (lock/ is unchanged)", firstLines(out))
	}
	files := map[string][]stub{}
	for _, s := range ex.stubs {
		files[s.file] = append(files[s.file], s)
	}
	originals := map[string][]byte{}
	restore := func() {
		for path, src := range originals {
			os.WriteFile(path, src, 0o644)
		}
	}
	var done []string
	for file, stubs := range files {
		path := filepath.Join(dir, file)
		src, err := os.ReadFile(path)
		if err != nil {
			restore()
			return "", err
		}
		originals[path] = src
		out, err := stubOut(src, stubs)
		if err == nil {
			err = os.WriteFile(path, out, 0o644)
		}
		if err != nil {
			restore()
			return "", fmt.Errorf("judge: %s: %w (lock/ is as it was)", file, err)
		}
		for _, s := range stubs {
			done = append(done, s.fn+" in lock/"+s.file)
		}
	}
	for file, what := range ex.scripts {
		path := filepath.Join(dir, file)
		src, err := os.ReadFile(path)
		if err != nil {
			restore()
			return "", err
		}
		originals[path] = src
		var head []string
		for _, l := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(l, "--") {
				break
			}
			head = append(head, l)
		}
		head = append(head, "-- TODO(step "+strconv.Itoa(step)+"): "+what+".", "return 0", "")
		if err := os.WriteFile(path, []byte(strings.Join(head, "\n")), 0o644); err != nil {
			restore()
			return "", err
		}
		done = append(done, "lock/"+file)
	}
	if out, err := goBuild(ctx, root); err != nil {
		restore()
		return "", fmt.Errorf("judge: with the stubs the root module does not build: %s; lock/ is as it was", firstLines(out))
	}
	return fmt.Sprintf("step %d's lock is yours to write: %s are stubs with TODOs, and everything still builds.\n"+
		"Write them, then check them: make judge STEP=%d (and go test ./lock).\n"+
		"To get the originals back: git restore lock/ (git diff lock/ shows what you wrote; git stash keeps it).",
		step, strings.Join(done, ", "), step), nil
}

// goBuild builds the root module, and returns what go said.
func goBuild(ctx context.Context, root string) (string, error) {
	build := exec.CommandContext(ctx, "go", "build", "./...")
	build.Dir = root
	out, err := build.CombinedOutput()
	return string(out), err
}

// firstLines is go's first errors, on one line.
func firstLines(out string) string {
	var l []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") && len(l) < 3 {
			l = append(l, safe.Line(line))
		}
	}
	return strings.Join(l, "; ")
}

// stubOut replaces the bodies of the stubs' functions and keeps only the
// imports the file still uses (and "fmt", which the stubs use).
func stubOut(src []byte, stubs []stub) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	type cut struct {
		from, to int
		body     string
	}
	var cuts []cut
	for _, s := range stubs {
		found := false
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == s.fn && fn.Body != nil {
				cuts = append(cuts, cut{fset.Position(fn.Body.Lbrace).Offset, fset.Position(fn.Body.Rbrace).Offset, s.body})
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no func %s", s.fn)
		}
	}
	out := string(src)
	for i := len(cuts) - 1; i >= 0; i-- { // the later first, so offsets hold
		c := cuts[i]
		out = out[:c.from] + "{\n\t" + c.body + "\n" + out[c.to:]
	}
	// Imports: drop those nothing uses any more, add fmt.
	g, err := parser.ParseFile(fset, "", out, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	ast.Inspect(g, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	hasFmt := false
	for _, im := range g.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(path)
		if path == "github.com/redis/go-redis/v9" {
			name = "redis"
		}
		if im.Name != nil {
			name = im.Name.Name
		}
		if path == "fmt" {
			hasFmt = true
		}
		if name != "_" && !used[name] {
			out = strings.Replace(out, "\t"+im.Path.Value+"\n", "", 1)
			out = strings.Replace(out, "\t"+name+" "+im.Path.Value+"\n", "", 1)
		}
	}
	if !hasFmt {
		out = strings.Replace(out, "import (\n", "import (\n\t\"fmt\"\n", 1)
	}
	return format.Source([]byte(out))
}
