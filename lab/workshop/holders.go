package workshop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lockbuild"
)

// buildHolder builds the holder program of lock, as the judge builds its
// judging program: mutant:NAME, one of the root lock's mutants, or the
// folder of a package with the root lock's API, from the current folder
// or else from the repo's (lock: the root's).
func buildHolder(ctx context.Context, lock string) (*lockbuild.Built, error) {
	root, _, err := harness.Repo(ctx)
	if err != nil {
		return nil, err
	}
	if name, ok := strings.CutPrefix(lock, "mutant:"); ok {
		m, ok := lockbuild.MutantNamed(name)
		if !ok {
			return nil, fmt.Errorf("no mutant %s; the mutants are %s", safe.Quote(name), lockbuild.MutantNames())
		}
		return lockbuild.BuildMutant(ctx, root, m)
	}
	dir, _ := filepath.Abs(lock)
	if _, err := os.Stat(dir); err != nil && !filepath.IsAbs(lock) {
		dir = filepath.Join(root, lock)
	}
	return lockbuild.Package(ctx, root, dir, lock)
}
