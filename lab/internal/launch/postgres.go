package launch

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNoPostgres is returned when PostgreSQL cannot run here: its programs
// are missing, or this process runs as root and there is no user postgres
// to run them as.
var ErrNoPostgres = errors.New("launch: cannot run PostgreSQL here")

// PostgresBinDir finds the folder of PostgreSQL's programs: the one of
// pg_ctl when it and initdb are on PATH (following links: some images link
// only a few of them onto PATH), else the newest of Debian's versioned
// folders and Homebrew's keg-only postgresql@N formulae.
func PostgresBinDir() (string, error) {
	if ctl, err := exec.LookPath("pg_ctl"); err == nil {
		if _, err := exec.LookPath("initdb"); err == nil {
			if real, err := filepath.EvalSymlinks(ctl); err == nil {
				ctl = real
			}
			return filepath.Dir(ctl), nil
		}
	}
	var dirs []string
	for _, pattern := range []string{"/usr/lib/postgresql/*/bin", "/opt/homebrew/opt/postgresql@*/bin", "/usr/local/opt/postgresql@*/bin"} {
		m, _ := filepath.Glob(pattern)
		dirs = append(dirs, m...)
	}
	// Newest first: 17 before 9.
	version := func(d string) int {
		v := filepath.Base(filepath.Dir(d))
		n, _ := strconv.Atoi(v[strings.LastIndexAny(v, "@/")+1:])
		return n
	}
	slices.SortStableFunc(dirs, func(a, b string) int { return version(b) - version(a) })
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, "initdb")); err == nil && fi.Mode()&0o111 != 0 {
			return d, nil
		}
	}
	return "", errors.Join(ErrNoPostgres, errors.New("PostgreSQL not found (no initdb and pg_ctl on PATH or in /usr/lib/postgresql/*/bin): apt-get install postgresql, or brew install postgresql@17"))
}
