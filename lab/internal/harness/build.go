package harness

// The repository has two modules: the article's at its root and the
// lab's in lab/. The workshop and the lab's tests run the root's steps as
// programs: Repo finds both folders, and Build compiles them.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// The module paths of the repository's two modules.
const (
	RootModule = "example.com/walletlock"
	LabModule  = "example.com/walletlock/lab"
)

// ErrNotInRepo is Repo's error outside the repository.
var ErrNotInRepo = errors.New("run this from the walletlock repository (its root or lab/), where `make workshop` runs it")

// Repo returns the folders of the root module and of the lab, found from
// the module of the working directory (`go env GOMOD`): the lab's folder
// is lab/ in the root's, the root's is the lab's parent.
func Repo(ctx context.Context) (root, lab string, err error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return "", "", ErrNotInRepo
	}
	dir := filepath.Dir(gomod)
	switch modulePath(gomod) {
	case RootModule:
		root, lab = dir, filepath.Join(dir, "lab")
	case LabModule:
		root, lab = filepath.Dir(dir), dir
	default:
		return "", "", ErrNotInRepo
	}
	if modulePath(filepath.Join(root, "go.mod")) != RootModule || modulePath(filepath.Join(lab, "go.mod")) != LabModule {
		return "", "", ErrNotInRepo
	}
	return root, lab, nil
}

var moduleLine = regexp.MustCompile(`(?m)^module\s+"?([^\s"]+)"?\s*$`)

// modulePath is the module path a go.mod file declares, "" when it cannot
// be read.
func modulePath(gomod string) string {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return ""
	}
	m := moduleLine.FindSubmatch(b)
	if m == nil {
		return ""
	}
	return string(m[1])
}

// Build compiles pkgs, patterns of the module in dir such as ./cmd/...,
// into the folder out, as `go build -o out/ pkgs...` run in dir: each
// program is named after its folder. The compiler's messages go to
// stderr.
func Build(ctx context.Context, dir, out string, stderr io.Writer, pkgs ...string) error {
	args := append([]string{"build", "-o", out + string(filepath.Separator)}, pkgs...)
	build := exec.CommandContext(ctx, "go", args...)
	build.Dir, build.Stderr = dir, stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("go build %s in %s failed: %w", strings.Join(pkgs, " "), Printable(dir), err)
	}
	return nil
}
