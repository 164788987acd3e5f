// Package lockbuild builds a lock package that is not linked into the
// program that wants it into a judging program of its own: a learner's
// (make judge LOCK=./mylock, make race LOCK=./mylock), or a mutant of the
// root's lock (LOCK=mutant:NAME, mutants.go). It copies the package's
// files into a temporary module, whatever its folder is called, writes a
// small program there with the adapter made from what the package
// declares (judge.Article), and builds it. The judge runs that program
// with its own flags; the program is also the lock's holder process
// (judge.Main), which is how the workshop's race drives the lock.
package lockbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"go/types"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/launch"
)

// Built is a judging program made for one package: run exe with the
// judge's flags, then remove it.
type Built struct {
	Exe    string
	Claims []string // what the package declares: "Release", "Refresh", ...
	Name   string   // the adapter's: a holder of it runs with WALLETLOCK_JUDGE_HOLDER=Name
	dir    string
}

// Remove deletes the program and its module.
func (b *Built) Remove() { os.RemoveAll(b.dir) }

const (
	rootModule = "example.com/walletlock"
	labModule  = "example.com/walletlock/lab"
)

type module struct{ path, dir string }

// Package makes the judging program of the package in dir, which has
// the root lock's API: Acquire(ctx, rdb, key, ttl) (*Lock, error) and, as
// far as it has them, (*Lock).Release(ctx), Refresh(ctx, ttl),
// Watch(ctx, ttl), AcquireFenced(ctx, rdb, key, fenceKey, ttl), a Fence
// field and ErrNotHeld. root is the repo (the root module's folder); name
// is how LOCK= named the package.
func Package(ctx context.Context, root, dir, name string) (*Built, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		where := ""
		if filepath.Clean(name) != dir {
			where = " (no folder " + safe.Quote(dir) + ")"
		}
		return nil, Refusal{fmt.Errorf("judge: LOCK=%s does not exist%s", safe.Quote(name), where)}
	case err != nil:
		return nil, Refusal{fmt.Errorf("judge: LOCK=%s: %v", safe.Quote(name), err)}
	case !fi.IsDir():
		return nil, Refusal{fmt.Errorf("judge: LOCK=%s is a file: name the folder of the package", safe.Quote(name))}
	}
	mod, err := findModule(dir)
	if err != nil {
		return nil, err
	}
	files, err := readFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("judge: read the package in %s: %w", safe.Quote(dir), err)
	}
	var extra []module
	if mod.path != rootModule && mod.path != labModule {
		extra = append(extra, mod)
	}
	return build(ctx, root, name, files, extra, nil)
}

// readFiles reads the package in dir, its tests left out: its Go files,
// and what they embed (.lua).
func readFiles(dir string) (map[string]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), "_test.go") || !e.Type().IsRegular() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = string(raw)
	}
	return files, nil
}

// findModule walks up from dir to the go.mod that holds it.
func findModule(dir string) (module, error) {
	for d := dir; ; d = filepath.Dir(d) {
		raw, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for line := range strings.Lines(string(raw)) {
				if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return module{strings.Trim(strings.TrimSpace(p), `"`), d}, nil
				}
			}
			return module{}, fmt.Errorf("judge: %s has no module line", safe.Quote(filepath.Join(d, "go.mod")))
		}
		if d == filepath.Dir(d) {
			return module{}, Refusal{fmt.Errorf("judge: %s is in no Go module (no go.mod above it)", safe.Quote(dir))}
		}
	}
}

// build writes the package's files into a temporary module as package
// judgeexec/lk, with the program that judges it, and builds it. Go's
// temporary files go into the same folder, so that a judge killed while
// it builds leaves one folder, which the next judge removes.
func build(ctx context.Context, root, name string, files map[string]string, extra []module, serverArgs []string) (*Built, error) {
	api, err := readAPI(files)
	if err != nil {
		return nil, fmt.Errorf("judge: %s: %w", safe.Line(name), err) // a refusal, unless the package does not parse
	}
	tmp, err := launch.OwnedTemp("walletlock-judge-build-")
	if err != nil {
		return nil, fmt.Errorf("judge: %w", err)
	}
	b := &Built{Exe: filepath.Join(tmp, "judge"), dir: tmp, Claims: api.claims(), Name: name}
	fail := func(err error) (*Built, error) { b.Remove(); return nil, err }
	root, err = filepath.Abs(root)
	if err != nil {
		return fail(err)
	}
	// The root's module, the lab's and the package's own: required, each
	// replaced by its folder, their go.sum lines together (go reads a
	// line twice as once).
	mods := append([]module{{rootModule, root}, {labModule, filepath.Join(root, "lab")}}, extra...)
	var require, replace, sum strings.Builder
	for _, m := range mods {
		fmt.Fprintf(&require, "\t%s v0.0.0\n", m.path)
		fmt.Fprintf(&replace, "replace %s => %s\n", m.path, strconv.Quote(m.dir))
		raw, _ := os.ReadFile(filepath.Join(m.dir, "go.sum"))
		sum.Write(raw)
	}
	gomod := "module judgeexec\n\ngo 1.26.0\n\nrequire (\n" + require.String() + ")\n\n" + replace.String()
	main, lines := api.program(name, serverArgs)
	write := map[string]string{"go.mod": gomod, "go.sum": sum.String(), "main.go": main}
	for f, text := range files {
		write[filepath.Join("lk", f)] = text
	}
	gotmp := filepath.Join(tmp, "go-tmp")
	for _, d := range []string{filepath.Join(tmp, "lk"), gotmp} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return fail(err)
		}
	}
	for f, text := range write {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte(text), 0o644); err != nil {
			return fail(err)
		}
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.Exe, ".")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTMPDIR="+gotmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		if ctx.Err() != nil {
			return fail(ctx.Err())
		}
		return fail(buildError(name, tmp, string(out), lines, api))
	}
	return b, nil
}

// buildError says why the program did not build: a function of the
// package's whose signature is not the one the judge expects (named, with
// what it expects: a refusal), or the package's own compile error, in the
// compiler's first lines with the package's folder as LOCK= names it, and
// no temporary file's name.
func buildError(name, tmp, out string, lines map[int]string, api api) error {
	// The package compiled, and the program that hands it to the judge
	// did not: the first error there names the line, so the function.
	re := regexp.MustCompile(`(?m)^\./main\.go:(\d+):\d+: (.*)$`)
	if m := re.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		if fn, ok := lines[n]; ok {
			return Refusal{fmt.Errorf("judge: %s: its %s is %s; the judge expects %s", safe.Line(name), fn, api.sigs[fn], Expected[fn])}
		}
		return Refusal{fmt.Errorf("judge: %s: the judge's program does not compile with it: %s", safe.Line(name), safe.Line(m[2]))}
	}
	where := strings.TrimSuffix(name, "/")
	if strings.HasPrefix(name, "mutant:") {
		where = "lock"
	}
	inLK := regexp.MustCompile(`^(\./)?lk/`)
	var first []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "#") {
			continue
		}
		l = inLK.ReplaceAllLiteralString(strings.ReplaceAll(l, tmp+string(filepath.Separator), ""), where+"/")
		first = append(first, safe.Line(l))
		if len(first) == 3 {
			break
		}
	}
	return fmt.Errorf("judge: %s does not compile: %s", safe.Line(name), strings.Join(first, "; "))
}

// Expected are the signatures the judge takes, as a learner reads them.
var Expected = map[string]string{
	"Acquire":       "`func Acquire(ctx context.Context, rdb Client, key string, ttl time.Duration) (*Lock, error)`",
	"Release":       "`func (l *Lock) Release(ctx context.Context) error`",
	"Refresh":       "`func (l *Lock) Refresh(ctx context.Context, ttl time.Duration) error`",
	"Watch":         "`func (l *Lock) Watch(ctx context.Context, ttl time.Duration) (context.Context, context.CancelFunc)`",
	"AcquireFenced": "`func AcquireFenced(ctx context.Context, rdb Client, key, fenceKey string, ttl time.Duration) (*Lock, error)`",
	"Fence":         "a field `Fence int64` of Lock",
	"ErrNotHeld":    "an error, `var ErrNotHeld = errors.New(...)`",
}

// api is what a package declares of the root lock's API: the source of
// each type the adapter needs, qualified ("*lk.Lock", "*redis.Client").
type api struct {
	lease, client string
	imports       map[string]string // name -> path, for those types
	sigs          map[string]string // what it declares ("Release", "Fence"...) -> the declaration as written
}

func (a api) has(name string) bool { return a.sigs[name] != "" }

func (a api) fenced() bool { return a.has("AcquireFenced") && a.has("Fence") }

func (a api) claims() []string {
	c := []string{"Acquire", "Release"}
	for _, f := range []string{"Refresh", "Watch"} {
		if a.has(f) {
			c = append(c, f)
		}
	}
	if a.fenced() {
		c = append(c, "AcquireFenced")
	}
	return c
}

// readAPI parses the package's Go files (not its tests).
func readAPI(files map[string]string) (api, error) {
	a := api{imports: map[string]string{}, sigs: map[string]string{}}
	fset := token.NewFileSet()
	var parsed []*ast.File
	for name, text := range files {
		if !strings.HasSuffix(name, ".go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, text, 0)
		if err != nil {
			return a, fmt.Errorf("it does not parse: %s", safe.Line(err.Error()))
		}
		parsed = append(parsed, f)
	}
	if len(parsed) == 0 {
		return a, Refusal{errors.New("it holds no Go files")}
	}
	// A declaration as the learner wrote it, for a message; a type as the
	// judge's program names it (qualified, and on one line: printed with
	// the file's positions, "lk." and the name it qualifies would be put on
	// two).
	decl := func(n ast.Node) string {
		var buf bytes.Buffer
		printer.Fprint(&buf, fset, n)
		return "`" + buf.String() + "`"
	}
	var acquire *ast.FuncDecl
	var imports map[string]string // acquire's file's, by the name it uses
	for _, f := range parsed {
		fileImports := map[string]string{}
		for _, im := range f.Imports {
			path := strings.Trim(im.Path.Value, `"`)
			name := filepath.Base(path)
			if strings.HasPrefix(name, "v") && strings.Contains(path, "/") { // github.com/redis/go-redis/v9
				name = strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "go-")
			}
			if im.Name != nil {
				name = im.Name.Name
			}
			fileImports[name] = path
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				// Acquire and AcquireFenced are functions; the others, methods.
				if name := d.Name.Name; (d.Recv == nil) == (name == "Acquire" || name == "AcquireFenced") {
					a.sigs[name] = decl(&ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type})
					if name == "Acquire" {
						acquire, imports = d, fileImports
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						if slices.ContainsFunc(s.Names, func(id *ast.Ident) bool { return id.Name == "ErrNotHeld" }) {
							a.sigs["ErrNotHeld"] = decl(&ast.GenDecl{Tok: d.Tok, Specs: []ast.Spec{s}})
						}
					case *ast.TypeSpec:
						if st, ok := s.Type.(*ast.StructType); ok && s.Name.Name == "Lock" {
							for _, fld := range st.Fields.List {
								if slices.ContainsFunc(fld.Names, func(id *ast.Ident) bool { return id.Name == "Fence" }) {
									a.sigs["Fence"] = "`Fence " + types.ExprString(fld.Type) + "`"
								}
							}
						}
					}
				}
			}
		}
	}
	if acquire == nil {
		return a, Refusal{fmt.Errorf("it has no Acquire; the judge expects %s", Expected["Acquire"])}
	}
	if acquire.Type.Params.NumFields() != 4 || acquire.Type.Results.NumFields() != 2 {
		return a, Refusal{fmt.Errorf("its Acquire is %s; the judge expects %s", a.sigs["Acquire"], Expected["Acquire"])}
	}
	client, lease := acquire.Type.Params.List[paramIndex(acquire.Type.Params, 1)].Type, acquire.Type.Results.List[0].Type
	a.client, a.lease = types.ExprString(qualify(client)), types.ExprString(qualify(lease))
	for _, e := range []ast.Expr{client, lease} {
		ast.Inspect(e, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && imports[id.Name] != "" {
					a.imports[id.Name] = imports[id.Name]
				}
			}
			return true
		})
	}
	if !a.has("Release") {
		return a, Refusal{fmt.Errorf("it has no Release; the judge expects %s", Expected["Release"])}
	}
	return a, nil
}

// paramIndex finds the field of params that holds the i-th parameter.
func paramIndex(params *ast.FieldList, i int) int {
	n := 0
	for j, f := range params.List {
		n += max(1, len(f.Names))
		if n > i {
			return j
		}
	}
	return len(params.List) - 1
}

// qualify puts the package's own exported type names behind "lk.".
func qualify(e ast.Expr) ast.Expr {
	switch e := e.(type) {
	case *ast.Ident:
		if ast.IsExported(e.Name) {
			return &ast.SelectorExpr{X: ast.NewIdent("lk"), Sel: e}
		}
	case *ast.StarExpr:
		return &ast.StarExpr{X: qualify(e.X)}
	}
	return e
}

// program is the judging program's main.go, and which of its lines
// hands the judge which of the package's functions (to name a function
// whose signature does not fit).
func (a api) program(name string, serverArgs []string) (string, map[int]string) {
	lines := []string{"// Code generated by the judge for " + strconv.Quote(name) + "; a temporary program.", "", "package main", "", "import ("}
	for _, n := range slices.Sorted(maps.Keys(a.imports)) {
		lines = append(lines, fmt.Sprintf("\t%s %q", n, a.imports[n]))
	}
	lines = append(lines, "\tlk \"judgeexec/lk\"", "\t\"example.com/walletlock/lab/judge\"", ")", "", "func main() {")
	fn := map[int]string{}
	add := func(f, line string) {
		lines = append(lines, line)
		fn[len(lines)] = f
	}
	add("Acquire", fmt.Sprintf("\ta := judge.Article[%s, %s]{Name: %q, Acquire: lk.Acquire,", a.lease, a.client, name))
	add("Release", fmt.Sprintf("\t\tRelease: (%s).Release,", a.lease))
	if a.has("Refresh") {
		add("Refresh", fmt.Sprintf("\t\tRefresh: (%s).Refresh,", a.lease))
	}
	if a.has("Watch") {
		add("Watch", fmt.Sprintf("\t\tWatch: (%s).Watch,", a.lease))
	}
	if a.fenced() {
		add("AcquireFenced", "\t\tAcquireFenced: lk.AcquireFenced,")
		add("Fence", fmt.Sprintf("\t\tFence: func(l %s) int64 { return l.Fence },", a.lease))
	}
	if a.has("ErrNotHeld") {
		add("ErrNotHeld", "\t\tNotHeld: lk.ErrNotHeld,")
	}
	lines = append(lines, "\t}.Adapter()")
	if len(serverArgs) > 0 {
		lines = append(lines, fmt.Sprintf("\ta.ServerArgs = %#v", serverArgs))
	}
	lines = append(lines, "\tjudge.Main(a)", "}")
	return strings.Join(lines, "\n") + "\n", fn
}

// Refusal is an error in what the user gave (a path, a package, a
// signature): a program says it in one line and exits 2, before any work.
type Refusal struct{ error }

// Refuse marks err as a Refusal.
func Refuse(err error) error { return Refusal{err} }
