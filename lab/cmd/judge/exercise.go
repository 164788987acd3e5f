package main

// make exercise STEP=N: the root's lock/ with step N's functions turned
// into stubs, for a learner to write them before reading them. Everything
// still builds; `make judge STEP=N` says what the learner's version does.

import (
	"context"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/lockbuild"
)

// stub is one function to take out, and the body a learner starts from.
type stub struct{ fn, body string }

// exercises are step N's: its file in lock/ and the functions in it that
// become stubs, and its .lua script and what the script must do.
var exercises = map[int]struct {
	file         string
	stubs        []stub
	script, what string
}{
	2: {"lock.go", []stub{
		{"Acquire", `// TODO(step 2): refuse a ttl under 1ms (ErrBadTTL) before any call.
	// Take a new random token (rand.Text), then try SET key token NX PX ttl
	// (rdb.SetNX) until it succeeds, waiting a few ms between tries (pause)
	// and giving up when ctx ends (failed says why).
	return nil, fmt.Errorf("lock: Acquire is yours to write (step 2), see the TODO in lock.go")`},
		{"Release", `// TODO(step 2): delete the key only while it holds l.Token, in one step:
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
	}, "release.lua", "if the key holds ARGV[1], delete it and return 1; else return 0"},
	3: {"watch.go", []stub{
		{"Refresh", `// TODO(step 3): refuse a ttl under 1ms (ErrBadTTL); then run
	// refreshScript (refresh.lua): set the TTL again only while the key
	// holds l.Token. 0 is ErrNotHeld: never create the key again. As with
	// Release, a GET then a PEXPIRE is a check and an act in two commands:
	// make judge STEP=3 stops a Refresh between them.
	_ = refreshScript // yours to run
	return fmt.Errorf("lock: Refresh is yours to write (step 3), see the TODO in watch.go")`},
		{"Watch", `// TODO(step 3): return a context derived from parent that a goroutine
	// cancels, with the reason as its cause, as soon as a Refresh (every
	// ttl/3, each bounded by ttl/3) fails; and a stop function that ends it.
	// A ttl under 1ms: cancel at once with ErrBadTTL, start nothing.
	ctx, cancel := context.WithCancelCause(parent)
	cancel(fmt.Errorf("lock: Watch is yours to write (step 3), see the TODO in watch.go"))
	return ctx, func() { cancel(context.Canceled) }`},
	}, "refresh.lua", "if the key holds ARGV[1], PEXPIRE it to ARGV[2] and return 1; else return 0"},
	5: {"fence.go", []stub{
		{"AcquireFenced", `// TODO(step 5): Acquire, but each try runs acquireFencedScript
	// (acquire_fenced.lua) on key and fenceKey: it takes the lock and the
	// next number of the fence counter in one step. Return the Lock with
	// its Fence set. (SET NX and then INCR from Go would be two commands: a
	// holder that stops between them comes back with a fence above the
	// live holder's; make judge STEP=5 stops it there.)
	_ = acquireFencedScript // yours to run
	return nil, fmt.Errorf("lock: AcquireFenced is yours to write (step 5), see the TODO in fence.go")`},
	}, "acquire_fenced.lua", "SET KEYS[1] ARGV[1] NX PX ARGV[2]; if it was set, return INCR KEYS[2] (and if INCR fails, DEL KEYS[1] and return the error: a failed call holds nothing); else return 0"},
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
	out, err := command(ctx, dir, "git", "status", "--porcelain", "--", ".")
	if err != nil {
		return "", fmt.Errorf("judge: the exercise needs lock/ in a git checkout, so that `git restore lock/` brings the originals back: %v", err)
	}
	if strings.TrimSpace(out) != "" {
		return "", fmt.Errorf("judge: lock/ has changes of yours (git status lock/); commit or stash them first, so that git restore can bring the originals back without losing them")
	}
	if out, err := command(ctx, root, "go", "build", "./..."); err != nil {
		return "", fmt.Errorf("judge: the root module does not build, before any stub: %s; fix that first (lock/ is unchanged)", firstLines(out))
	}
	goFile, script := filepath.Join(dir, ex.file), filepath.Join(dir, ex.script)
	originals := map[string][]byte{}
	for _, path := range []string{goFile, script} {
		if originals[path], err = os.ReadFile(path); err != nil {
			return "", err
		}
	}
	stubbed, err := stubOut(originals[goFile], ex.stubs)
	if err != nil {
		return "", fmt.Errorf("judge: %s: %w (lock/ is as it was)", ex.file, err)
	}
	// The script keeps its header, the comment lines that open it.
	lua := strings.Split(string(originals[script]), "\n")
	if n := slices.IndexFunc(lua, func(l string) bool { return !strings.HasPrefix(l, "--") }); n >= 0 {
		lua = lua[:n]
	}
	lua = append(lua, "-- TODO(step "+strconv.Itoa(step)+"): "+ex.what+".", "return 0", "")
	restore := func() {
		for path, src := range originals {
			os.WriteFile(path, src, 0o644)
		}
	}
	for path, src := range map[string][]byte{goFile: stubbed, script: []byte(strings.Join(lua, "\n"))} {
		if err := os.WriteFile(path, src, 0o644); err != nil {
			restore()
			return "", fmt.Errorf("judge: %w (lock/ is as it was)", err)
		}
	}
	if out, err := command(ctx, root, "go", "build", "./..."); err != nil {
		restore()
		return "", fmt.Errorf("judge: with the stubs the root module does not build: %s; lock/ is as it was", firstLines(out))
	}
	var done []string
	for _, s := range ex.stubs {
		done = append(done, s.fn+" in lock/"+ex.file)
	}
	done = append(done, "lock/"+ex.script)
	return fmt.Sprintf("step %d's lock is yours to write: %s are stubs with TODOs, and everything still builds.\n"+
		"Write them, then check them: make judge STEP=%d (and go test ./lock).\n"+
		"To get the originals back: git restore lock/ (git diff lock/ shows what you wrote; git stash keeps it).",
		step, strings.Join(done, ", "), step), nil
}

// command runs a command in dir, and returns what it said.
func command(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
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
	out := string(src)
	for _, s := range stubs {
		f, err := parser.ParseFile(fset, "", out, 0)
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(f.Decls, func(d ast.Decl) bool {
			fn, ok := d.(*ast.FuncDecl)
			return ok && fn.Name.Name == s.fn && fn.Body != nil
		})
		if i < 0 {
			return nil, fmt.Errorf("no func %s", s.fn)
		}
		body := f.Decls[i].(*ast.FuncDecl).Body
		out = out[:fset.Position(body.Lbrace).Offset] + "{\n\t" + s.body + "\n" + out[fset.Position(body.Rbrace).Offset:]
	}
	// Imports: drop the lines of those nothing uses any more, add fmt.
	g, err := parser.ParseFile(fset, "", out, 0)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{"_": true}
	ast.Inspect(g, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	drop := map[int]bool{}
	hasFmt := false
	for _, im := range g.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		name := filepath.Base(path)
		switch {
		case im.Name != nil:
			name = im.Name.Name
		case path == "github.com/redis/go-redis/v9":
			name = "redis"
		}
		hasFmt = hasFmt || path == "fmt"
		drop[fset.Position(im.Pos()).Line] = !used[name]
	}
	var lines []string
	for i, l := range strings.Split(out, "\n") {
		if !drop[i+1] {
			lines = append(lines, l)
		}
		if l == "import (" && !hasFmt {
			lines = append(lines, "\t\"fmt\"")
		}
	}
	return format.Source([]byte(strings.Join(lines, "\n")))
}
