//go:build !unix

package testenv

import (
	"errors"
	"os"
)

func freeze(*os.Process) error { return errors.New("no SIGSTOP on this system") }
func thaw(*os.Process) error   { return nil }
