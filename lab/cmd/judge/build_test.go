package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"example.com/walletlock/lab/internal/lockbuild"
)

// replace is an edit of the learner's source: old, found exactly once,
// becomes new; "" appends new.
func replace(t *testing.T, old, new string) func(string) string {
	return func(src string) string {
		if old == "" {
			return src + "\n" + new + "\n"
		}
		if n := strings.Count(src, old); n != 1 {
			t.Fatalf("the learner's lock.go holds %q %d times, want once", old, n)
		}
		return strings.Replace(src, old, new, 1)
	}
}

// class is a learner's module of its own, outside the repository.
func class(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/class\n\ngo 1.26.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A function of the learner's package whose signature is not the one the
// judge takes is named, with the signature the judge expects, and refused
// (exit 2), rather than shown as a compiler error in a temporary file.
func TestBuildPackage_namesTheFunctionWithTheWrongSignature(t *testing.T) {
	root := repo(t)
	fenced := func(sig string) string {
		return "func AcquireFenced(" + sig + ") (*Lock, error) { return nil, nil }"
	}
	for _, c := range []struct {
		fn   string
		edit func(*testing.T) func(string) string
		is   string // the learner's declaration, as the message quotes it
	}{
		{"Acquire", func(t *testing.T) func(string) string {
			return replace(t, "rdb *redis.Client, key string, ttl time.Duration) (*Lock, error) {\n\tif ttl < time.Millisecond {",
				"rdb *redis.Client, key string, ms int) (*Lock, error) {\n\tttl := time.Duration(ms) * time.Millisecond\n\tif ttl < time.Millisecond {")
		}, "func Acquire(ctx context.Context, rdb *redis.Client, key string, ms int) (*Lock, error)"},
		{"Release", func(t *testing.T) func(string) string {
			return replace(t, "Release(ctx context.Context) error {", "Release(ctx context.Context, force bool) error {")
		}, "func (l *Lock) Release(ctx context.Context, force bool) error"},
		{"Refresh", func(t *testing.T) func(string) string {
			return replace(t, "", "func (l *Lock) Refresh(ctx context.Context) error { return nil }")
		}, "func (l *Lock) Refresh(ctx context.Context) error"},
		{"Watch", func(t *testing.T) func(string) string {
			return replace(t, "", "func (l *Lock) Watch(ctx context.Context, ttl time.Duration) context.Context { return ctx }")
		}, "func (l *Lock) Watch(ctx context.Context, ttl time.Duration) context.Context"},
		{"AcquireFenced", func(t *testing.T) func(string) string {
			add := replace(t, "", fenced("ctx context.Context, rdb *redis.Client, key string, ttl time.Duration"))
			return func(src string) string {
				return add(replace(t, "\tKey   string\n", "\tKey   string\n\tFence int64\n")(src))
			}
		}, "func AcquireFenced(ctx context.Context, rdb *redis.Client, key string, ttl time.Duration) (*Lock, error)"},
		{"Fence", func(t *testing.T) func(string) string {
			add := replace(t, "", fenced("ctx context.Context, rdb *redis.Client, key, fenceKey string, ttl time.Duration"))
			return func(src string) string {
				return add(replace(t, "\tKey   string\n", "\tKey   string\n\tFence int\n")(src))
			}
		}, "Fence int"},
		{"ErrNotHeld", func(t *testing.T) func(string) string {
			str := replace(t, `var ErrNotHeld = errors.New("learner: lock not held")`, `const ErrNotHeld = "learner: lock not held"`)
			use := replace(t, "return ErrNotHeld", "return errors.New(ErrNotHeld)")
			return func(src string) string { return use(str(src)) }
		}, `const ErrNotHeld = "learner: lock not held"`},
	} {
		t.Run(c.fn, func(t *testing.T) {
			pkg := learner(t, root, class(t), "mine", c.edit(t))
			b, err := lockbuild.Package(t.Context(), root, pkg, "./mine")
			if err == nil {
				b.Remove()
				t.Fatalf("the build made a program for a %s of the wrong type", c.fn)
			}
			if !errors.As(err, new(lockbuild.Refusal)) {
				t.Errorf("the error is not a refusal (exit 2): %v", err)
			}
			msg := err.Error()
			for _, want := range []string{"judge: ./mine: its " + c.fn + " is `" + c.is + "`; the judge expects ", lockbuild.Expected[c.fn]} {
				if !strings.Contains(msg, want) {
					t.Errorf("error = %q, want it to contain %q", msg, want)
				}
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, "main.go") || strings.Contains(msg, "lk.") {
				t.Errorf("error = %q, want one line that names nothing of the judge's program", msg)
			}
		})
	}
}

// A learner's own compile error is the compiler's first lines, with the
// package's folder as LOCK= names it and none of the judge's temporary
// files; it is no refusal (exit 1): the input was right, the code is not.
func TestBuildPackage_showsTheLearnersCompileError(t *testing.T) {
	root := repo(t)
	pkg := learner(t, root, class(t), "mine", func(src string) string {
		return replace(t, "return nil, ctx.Err()", "return nil, ctx.Errr()")(src)
	})
	b, err := lockbuild.Package(t.Context(), root, pkg, "./mine")
	if err == nil {
		b.Remove()
		t.Fatal("the build made a package that does not compile")
	}
	msg := err.Error()
	if errors.As(err, new(lockbuild.Refusal)) {
		t.Errorf("a compile error is a refusal (exit 2): %v", err)
	}
	if !strings.HasPrefix(msg, "judge: ./mine does not compile: ./mine/lock.go:") || !strings.Contains(msg, "ctx.Errr undefined") {
		t.Errorf("error = %q, want the compiler's line at ./mine/lock.go", msg)
	}
	for _, not := range []string{"\n", "walletlock-judge-build", "lk/", "main.go", os.TempDir()} {
		if strings.Contains(msg, not) {
			t.Errorf("error = %q, want no %q in it", msg, not)
		}
	}
}
