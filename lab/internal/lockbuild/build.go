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
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
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
	modDir, modPath, err := findModule(dir)
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("judge: read the package in %s: %w", safe.Quote(dir), err)
	}
	files := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || strings.HasSuffix(e.Name(), "_test.go") || !e.Type().IsRegular() {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = string(raw) // Go files, and what they embed (.lua)
	}
	var extra []module
	if modPath != rootModule && modPath != labModule {
		extra = append(extra, module{modPath, modDir})
	}
	return build(ctx, root, name, files, extra, nil)
}

// findModule walks up from dir to the go.mod that holds it.
func findModule(dir string) (modDir, modPath string, err error) {
	for d := dir; ; d = filepath.Dir(d) {
		raw, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			for _, line := range strings.Split(string(raw), "\n") {
				if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
					return d, strings.Trim(strings.TrimSpace(p), `"`), nil
				}
			}
			return "", "", fmt.Errorf("judge: %s has no module line", safe.Quote(filepath.Join(d, "go.mod")))
		}
		if d == filepath.Dir(d) {
			return "", "", Refusal{fmt.Errorf("judge: %s is in no Go module (no go.mod above it)", safe.Quote(dir))}
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
	gomod := fmt.Sprintf("module judgeexec\n\ngo 1.26.0\n\nrequire (\n\t%s v0.0.0\n\t%s v0.0.0\n", rootModule, labModule)
	for _, m := range extra {
		gomod += fmt.Sprintf("\t%s v0.0.0\n", m.path)
	}
	gomod += fmt.Sprintf(")\n\nreplace %s => %s\n\nreplace %s => %s\n", rootModule, strconv.Quote(root), labModule, strconv.Quote(filepath.Join(root, "lab")))
	sums := []string{filepath.Join(root, "go.sum"), filepath.Join(root, "lab", "go.sum")}
	for _, m := range extra {
		gomod += fmt.Sprintf("\nreplace %s => %s\n", m.path, strconv.Quote(m.dir))
		sums = append(sums, filepath.Join(m.dir, "go.sum"))
	}
	var sum []string
	for _, f := range sums {
		raw, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(raw), "\n") {
			if l != "" && !slices.Contains(sum, l) {
				sum = append(sum, l)
			}
		}
	}
	sort.Strings(sum)
	main, lines := api.program(name, serverArgs)
	write := map[string]string{"go.mod": gomod, "go.sum": strings.Join(sum, "\n") + "\n", "main.go": main}
	for f, text := range files {
		write[filepath.Join("lk", f)] = text
	}
	if err := os.Mkdir(filepath.Join(tmp, "lk"), 0o755); err != nil {
		return fail(err)
	}
	for f, text := range write {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte(text), 0o644); err != nil {
			return fail(err)
		}
	}
	gotmp := filepath.Join(tmp, "go-tmp")
	if err := os.Mkdir(gotmp, 0o755); err != nil {
		return fail(err)
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
	lease, client                string
	release, refresh, watch      bool
	acquireFenced, fence, notHel bool
	imports                      map[string]string // name -> path, for the client's type
	sigs                         map[string]string // function -> its signature as written
}

func (a api) claims() []string {
	c := []string{"Acquire", "Release"}
	for _, x := range []struct {
		ok   bool
		name string
	}{{a.refresh, "Refresh"}, {a.watch, "Watch"}, {a.acquireFenced && a.fence, "AcquireFenced"}} {
		if x.ok {
			c = append(c, x.name)
		}
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
	typ := func(e ast.Expr) string { return types.ExprString(qualify(e)) }
	var acquire *ast.FuncDecl
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
				name := d.Name.Name
				if (d.Recv == nil) == (name == "Acquire" || name == "AcquireFenced") {
					a.sigs[name] = decl(&ast.FuncDecl{Recv: d.Recv, Name: d.Name, Type: d.Type})
				}
				switch {
				case d.Recv == nil && name == "Acquire":
					acquire = d
					if d.Type.Params.NumFields() >= 2 {
						a.client = typ(d.Type.Params.List[paramIndex(d.Type.Params, 1)].Type)
						collectImports(d.Type.Params, fileImports, a.imports)
					}
				case d.Recv == nil && name == "AcquireFenced":
					a.acquireFenced = true
				case d.Recv != nil && name == "Release":
					a.release = true
				case d.Recv != nil && name == "Refresh":
					a.refresh = true
				case d.Recv != nil && name == "Watch":
					a.watch = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.ValueSpec:
						if slices.ContainsFunc(s.Names, func(id *ast.Ident) bool { return id.Name == "ErrNotHeld" }) {
							a.notHel = true
							a.sigs["ErrNotHeld"] = decl(&ast.GenDecl{Tok: d.Tok, Specs: []ast.Spec{s}})
						}
					case *ast.TypeSpec:
						if st, ok := s.Type.(*ast.StructType); ok && s.Name.Name == "Lock" {
							for _, fld := range st.Fields.List {
								if slices.ContainsFunc(fld.Names, func(id *ast.Ident) bool { return id.Name == "Fence" }) {
									a.fence = true
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
	a.lease = typ(acquire.Type.Results.List[0].Type)
	if !a.release {
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

// collectImports keeps the imports the parameters' types name.
func collectImports(params *ast.FieldList, file, into map[string]string) {
	ast.Inspect(params, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && file[id.Name] != "" {
				into[id.Name] = file[id.Name]
			}
		}
		return true
	})
}

// program is the judging program's main.go, and which of its lines
// hands the judge which of the package's functions (to name a function
// whose signature does not fit).
func (a api) program(name string, serverArgs []string) (string, map[int]string) {
	var lines []string
	fn := map[int]string{}
	add := func(f, line string) {
		lines = append(lines, line)
		if f != "" {
			fn[len(lines)] = f
		}
	}
	add("", "// Code generated by the judge for "+strconv.Quote(name)+"; a temporary program.")
	add("", "")
	add("", "package main")
	add("", "")
	add("", "import (")
	var names []string
	for n := range a.imports {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if p := a.imports[n]; p != "context" && p != "time" {
			add("", fmt.Sprintf("\t%s %q", n, p))
		}
	}
	add("", "\t\"context\"")
	add("", "\t\"time\"")
	add("", "\tlk \"judgeexec/lk\"")
	add("", "\t\"example.com/walletlock/lab/judge\"")
	add("", ")")
	add("", "")
	add("", "var _ = context.Background")
	add("", "var _ = time.Second")
	add("", "")
	add("", "func main() {")
	add("Acquire", fmt.Sprintf("\ta := judge.Article[%s, %s]{Name: %q, Acquire: lk.Acquire,", a.lease, a.client, name))
	add("Release", fmt.Sprintf("\t\tRelease: (%s).Release,", a.lease))
	if a.refresh {
		add("Refresh", fmt.Sprintf("\t\tRefresh: (%s).Refresh,", a.lease))
	}
	if a.watch {
		add("Watch", fmt.Sprintf("\t\tWatch: (%s).Watch,", a.lease))
	}
	if a.acquireFenced && a.fence {
		add("AcquireFenced", "\t\tAcquireFenced: lk.AcquireFenced,")
		add("Fence", fmt.Sprintf("\t\tFence: func(l %s) int64 { return l.Fence },", a.lease))
	}
	if a.notHel {
		add("ErrNotHeld", "\t\tNotHeld: lk.ErrNotHeld,")
	}
	add("", "\t}.Adapter()")
	if len(serverArgs) > 0 {
		add("", fmt.Sprintf("\ta.ServerArgs = %#v", serverArgs))
	}
	add("", "\tjudge.Main(a)")
	add("", "}")
	return strings.Join(lines, "\n") + "\n", fn
}

// Refusal is an error in what the user gave (a path, a package, a
// signature): a program says it in one line and exits 2, before any work.
type Refusal struct{ error }

// Refuse marks err as a Refusal.
func Refuse(err error) error { return Refusal{err} }
