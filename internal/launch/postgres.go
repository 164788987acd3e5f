package launch

import (
	"errors"
	"os/exec"
	"path/filepath"
)

// ErrNoPostgres is returned when PostgreSQL cannot run here: its programs
// are missing, or this process runs as root and there is no user postgres
// to run them as.
var ErrNoPostgres = errors.New("launch: cannot run PostgreSQL here")

// PostgresBinary finds a PostgreSQL program (initdb, postgres) on PATH or
// in Debian's versioned folders.
func PostgresBinary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name); len(m) > 0 {
		return m[len(m)-1], nil
	}
	return "", errors.Join(ErrNoPostgres, errors.New(name+" is not on PATH (apt-get install postgresql, or brew install postgresql)"))
}
