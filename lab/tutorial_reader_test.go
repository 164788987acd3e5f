package walletlock_test

// A learner reads TUTORIAL.md top to bottom and should never have to open
// a file to follow it: what a quoted function uses is quoted too, and a
// term is explained where it first appears.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A quoted function shows what it uses of its own package: a program's
// flags and keys (package-level variables), the types it takes (the lock's
// Client where Acquire is quoted), and, for a function other than main,
// the functions it calls. main may call functions the page only names.
func TestTutorial_quotedFunctionsUseNothingUnshown(t *testing.T) {
	page := filepath.Join(repo, "TUTORIAL.md")
	quoted := map[string][]string{} // package folder -> the page's quoted lines from it, trimmed
	type fn struct {
		block fencedBlock
		dir   string
		decl  *ast.FuncDecl
	}
	var fns []fn
	for _, b := range readPageBlocks(t, page) {
		m := quoteMarker.FindStringSubmatch(b.marker)
		if m == nil || b.info != "go" {
			continue
		}
		dir := path.Dir(m[1])
		for _, l := range b.lines {
			quoted[dir] = append(quoted[dir], strings.TrimSpace(l))
		}
		f, err := parser.ParseFile(token.NewFileSet(), "", "package p\n"+strings.Join(b.lines, "\n"), 0)
		if err != nil {
			continue // a declaration the quote test checks; nothing here to follow
		}
		for _, d := range f.Decls {
			if d, ok := d.(*ast.FuncDecl); ok {
				fns = append(fns, fn{b, dir, d})
			}
		}
	}
	for _, f := range fns {
		decls := packageDecls(t, f.dir)
		shown := func(name string) bool {
			for _, l := range quoted[f.dir] {
				if l == decls[name] {
					return true
				}
			}
			return false
		}
		used := map[string]bool{}
		ast.Inspect(f.decl.Type.Params, func(n ast.Node) bool { // the types it takes
			if id, ok := n.(*ast.Ident); ok && decls[id.Name] != "" && strings.HasPrefix(decls[id.Name], "type ") {
				used[id.Name] = true
			}
			return true
		})
		ast.Inspect(f.decl.Body, func(n ast.Node) bool {
			if id, ok := n.(*ast.Ident); ok && decls[id.Name] != "" {
				kind := strings.Fields(decls[id.Name])[0]
				if kind != "func" && kind != "type" && kind != "const" && path.Dir(f.dir) == "cmd" || kind == "func" && f.decl.Name.Name != "main" && path.Dir(f.dir) == "cmd" {
					used[id.Name] = true
				}
			}
			return true
		})
		for name := range used {
			if name != f.decl.Name.Name && !shown(name) {
				t.Errorf("%s:%d: the quoted %s uses %s, which the page does not show: quote %q from %s", page, f.block.line, f.decl.Name.Name, name, decls[name], f.dir)
			}
		}
	}
}

// packageDecls maps each package-level name of the package in dir (a
// folder of the root module) to the line that declares it, trimmed: "func
// release(...) {", "type Client interface {", "ttl  = flag.Duration(...)"
// (in a var block), or "var ttl = ...".
func packageDecls(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(repo, filepath.FromSlash(dir), "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	decls := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		src := readLines(t, name)
		line := func(p token.Pos) string { return strings.TrimSpace(src[fset.Position(p).Line-1]) }
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					decls[d.Name.Name] = line(d.Pos())
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decls[s.Name.Name] = line(d.Pos())
					case *ast.ValueSpec:
						for _, id := range s.Names {
							decls[id.Name] = line(s.Pos())
							if !d.Lparen.IsValid() {
								decls[id.Name] = line(d.Pos())
							}
							if d.Tok == token.CONST {
								decls[id.Name] = "const " + decls[id.Name]
							}
						}
					}
				}
			}
		}
	}
	return decls
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(string(b), "\n")
}

// The terms a Go developer new to Redis meets on the page are explained,
// in bold, where they first appear, code quotes included; a term the page
// never explains does not appear on it.
func TestTutorial_explainsATermWhereItFirstAppears(t *testing.T) {
	page := filepath.Join(repo, "TUTORIAL.md")
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for _, term := range []string{"hash slot", "hash tag", "Redis Cluster", "Sentinel"} {
		first := regexp.MustCompile(`(?i)\b` + term).FindStringIndex(text)
		defined := regexp.MustCompile(`(?i)\*\*` + term + `s?\*\*`).FindStringIndex(text)
		switch {
		case first == nil:
		case defined == nil:
			t.Errorf("%s: %q appears (line %d) and is never explained: explain it in bold where it first appears, or keep it off the page", page, term, lineOf(text, first[0]))
		case first[0] < defined[0]:
			t.Errorf("%s:%d: %q appears before it is explained (line %d)", page, lineOf(text, first[0]), term, lineOf(text, defined[0]))
		}
	}
}

func lineOf(text string, offset int) int { return strings.Count(text[:offset], "\n") + 1 }
