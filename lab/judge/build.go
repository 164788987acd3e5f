package judge

// Judging a package that is not linked into this program: a learner's
// (make judge LOCK=./mylock), or a mutant of the root's lock (LOCK=
// mutant:NAME). The judge writes a small program in a temporary module
// that links the package and this one (replace directives point at the
// repo), with the adapter generated from what the package declares, builds
// it, and runs it with the same flags.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Built is a judging program made for one package: run Exe with the
// judge's flags, then Remove it.
type Built struct {
	Exe    string
	Claims []string // what the package declares: "Release", "Refresh", ...
	dir    string
}

// Remove deletes the program and its module.
func (b *Built) Remove() { os.RemoveAll(b.dir) }

// BuildPackage makes the judging program of the package in dir, which has
// the root lock's API: Acquire(ctx, rdb, key, ttl) (*Lock, error) and, as
// far as it has them, (*Lock).Release(ctx), Refresh(ctx, ttl),
// Watch(ctx, ttl), AcquireFenced(ctx, rdb, key, fenceKey, ttl), a Fence
// field and ErrNotHeld. root is the repo (the root module's folder).
func BuildPackage(ctx context.Context, root, dir, name string) (*Built, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	modDir, modPath, err := findModule(dir)
	if err != nil {
		return nil, err
	}
	rel, _ := filepath.Rel(modDir, dir)
	importPath := modPath
	if rel != "." {
		importPath += "/" + filepath.ToSlash(rel)
	}
	var extra []module
	if modPath != rootModule && modPath != labModule {
		extra = append(extra, module{modPath, modDir})
	}
	return build(ctx, root, name, importPath, dir, extra, nil, nil)
}

const (
	rootModule = "example.com/walletlock"
	labModule  = "example.com/walletlock/lab"
)

type module struct{ path, dir string }

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
			return "", "", fmt.Errorf("judge: %s has no module line", filepath.Join(d, "go.mod"))
		}
		if d == filepath.Dir(d) {
			return "", "", fmt.Errorf("judge: %s is in no Go module (no go.mod above it)", dir)
		}
	}
}

// build writes the program for the package at importPath (files in
// pkgDir) and builds it. serverArgs, when set, go to the adapter.
func build(ctx context.Context, root, name, importPath, pkgDir string, extra []module, serverArgs []string, prepare func(tmp string) error) (*Built, error) {
	api, err := readAPI(pkgDir)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "judge-build-")
	if err != nil {
		return nil, err
	}
	b := &Built{Exe: filepath.Join(tmp, "judge"), dir: tmp, Claims: api.claims()}
	fail := func(err error) (*Built, error) { b.Remove(); return nil, err }
	if prepare != nil {
		if err := prepare(tmp); err != nil {
			return fail(err)
		}
	}
	root, err = filepath.Abs(root)
	if err != nil {
		return fail(err)
	}
	gomod := fmt.Sprintf("module judgeexec\n\ngo 1.26.0\n\nrequire (\n\t%s v0.0.0\n\t%s v0.0.0\n", rootModule, labModule)
	for _, m := range extra {
		gomod += fmt.Sprintf("\t%s v0.0.0\n", m.path)
	}
	gomod += fmt.Sprintf(")\n\nreplace %s => %s\n\nreplace %s => %s\n", rootModule, root, labModule, filepath.Join(root, "lab"))
	sums := []string{filepath.Join(root, "go.sum"), filepath.Join(root, "lab", "go.sum")}
	for _, m := range extra {
		gomod += fmt.Sprintf("\nreplace %s => %s\n", m.path, m.dir)
		sums = append(sums, filepath.Join(m.dir, "go.sum"))
	}
	var sum []string
	seen := map[string]bool{}
	for _, f := range sums {
		raw, _ := os.ReadFile(f)
		for _, l := range strings.Split(string(raw), "\n") {
			if l != "" && !seen[l] {
				seen[l] = true
				sum = append(sum, l)
			}
		}
	}
	sort.Strings(sum)
	main := api.program(name, importPath, serverArgs)
	for f, text := range map[string]string{"go.mod": gomod, "go.sum": strings.Join(sum, "\n") + "\n", "main.go": main} {
		if err := os.WriteFile(filepath.Join(tmp, f), []byte(text), 0o644); err != nil {
			return fail(err)
		}
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.Exe, ".")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("judge: build the judging program of %s: %v\n%s", name, err, strings.TrimSpace(string(out))))
	}
	return b, nil
}

// api is what a package declares of the root lock's API: the source of
// each type the adapter needs, qualified ("*lk.Lock", "*redis.Client").
type api struct {
	lease, client                string
	release, refresh, watch      int // the number of parameters, 0: missing
	acquireFenced, fence, notHel bool
	imports                      map[string]string // name -> path, for the client's type
}

func (a api) claims() []string {
	c := []string{"Acquire"}
	for _, x := range []struct {
		ok   bool
		name string
	}{{a.release > 0, "Release"}, {a.refresh > 0, "Refresh"}, {a.watch > 0, "Watch"}, {a.acquireFenced && a.fence, "AcquireFenced"}} {
		if x.ok {
			c = append(c, x.name)
		}
	}
	return c
}

// readAPI parses the package's Go files (not its tests).
func readAPI(dir string) (api, error) {
	a := api{imports: map[string]string{}}
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return a, fmt.Errorf("judge: read the package in %s: %w", dir, err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			return a, fmt.Errorf("judge: read the package in %s: %w", dir, err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return a, fmt.Errorf("judge: %s holds no Go files", dir)
	}
	src := func(e ast.Expr) string {
		var buf bytes.Buffer
		printer.Fprint(&buf, fset, qualify(e))
		return buf.String()
	}
	var acquire *ast.FuncDecl
	{
		for _, f := range files {
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
					n := d.Type.Params.NumFields()
					switch {
					case d.Recv == nil && d.Name.Name == "Acquire":
						acquire = d
						if n == 4 {
							a.client = src(d.Type.Params.List[paramIndex(d.Type.Params, 1)].Type)
							collectImports(d.Type.Params, fileImports, a.imports)
						}
					case d.Recv == nil && d.Name.Name == "AcquireFenced" && n == 5:
						a.acquireFenced = true
					case d.Recv != nil && d.Name.Name == "Release":
						a.release = n
					case d.Recv != nil && d.Name.Name == "Refresh":
						a.refresh = n
					case d.Recv != nil && d.Name.Name == "Watch":
						a.watch = n
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.ValueSpec:
							for _, id := range s.Names {
								if id.Name == "ErrNotHeld" {
									a.notHel = true
								}
							}
						case *ast.TypeSpec:
							if st, ok := s.Type.(*ast.StructType); ok && s.Name.Name == "Lock" {
								for _, fld := range st.Fields.List {
									for _, id := range fld.Names {
										if id.Name == "Fence" {
											a.fence = true
										}
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if acquire == nil || a.client == "" || acquire.Type.Results.NumFields() != 2 {
		return a, fmt.Errorf("judge: the package in %s has no Acquire(ctx, rdb, key, ttl) (*Lock, error), the root lock's API", dir)
	}
	a.lease = src(acquire.Type.Results.List[0].Type)
	if a.release == 0 {
		return a, fmt.Errorf("judge: the package in %s has no (*Lock).Release(ctx)", dir)
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

// program is the judging program's main.go.
func (a api) program(name, importPath string, serverArgs []string) string {
	var b strings.Builder
	b.WriteString("// Code generated by the judge for " + name + "; a temporary program.\n\npackage main\n\nimport (\n\t\"context\"\n\t\"time\"\n\n")
	for n, p := range a.imports {
		if p != "context" && p != "time" {
			fmt.Fprintf(&b, "\t%s %q\n", n, p)
		}
	}
	fmt.Fprintf(&b, "\tlk %q\n\t\"example.com/walletlock/lab/judge\"\n)\n\n", importPath)
	b.WriteString("var _ = context.Background\nvar _ = time.Second\n\n")
	fmt.Fprintf(&b, "func main() {\n\ta := judge.Article[%s, %s]{Name: %q, Acquire: lk.Acquire,\n", a.lease, a.client, name)
	b.WriteString("\t\tRelease: " + method(a.lease, "Release", a.release, 1) + ",\n")
	if a.refresh > 0 {
		b.WriteString("\t\tRefresh: " + method(a.lease, "Refresh", a.refresh, 2) + ",\n")
	}
	if a.watch > 0 {
		b.WriteString("\t\tWatch: " + method(a.lease, "Watch", a.watch, 2) + ",\n")
	}
	if a.acquireFenced && a.fence {
		fmt.Fprintf(&b, "\t\tAcquireFenced: lk.AcquireFenced, Fence: func(l %s) int64 { return l.Fence },\n", a.lease)
	}
	if a.notHel {
		b.WriteString("\t\tNotHeld: lk.ErrNotHeld,\n")
	}
	b.WriteString("\t}.Adapter()\n")
	if len(serverArgs) > 0 {
		fmt.Fprintf(&b, "\ta.ServerArgs = %#v\n", serverArgs)
	}
	b.WriteString("\tjudge.Main(a)\n}\n")
	return b.String()
}

// method is a method expression of the lease, or, where the package's
// method takes fewer parameters than the judge's (a Refresh without a
// TTL), a function that drops the TTL.
func method(lease, name string, have, want int) string {
	if have >= want {
		return fmt.Sprintf("(%s).%s", lease, name)
	}
	switch name {
	case "Refresh":
		return fmt.Sprintf("func(l %s, ctx context.Context, _ time.Duration) error { return l.Refresh(ctx) }", lease)
	case "Watch":
		return fmt.Sprintf("func(l %s, ctx context.Context, _ time.Duration) (context.Context, context.CancelFunc) { return l.Watch(ctx) }", lease)
	}
	return fmt.Sprintf("(%s).%s", lease, name)
}

// ErrNoRoot is returned when the repo's root module cannot be found.
var ErrNoRoot = errors.New("judge: cannot find the repo's root module")
