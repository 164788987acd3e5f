package labtest

import (
	"os"
	"path/filepath"
	"strconv"
)

// Processes returns the pids of the processes for which match, given the
// process's folder in /proc, says true. Without /proc it returns none.
func Processes(match func(dir string) bool) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err == nil && match(filepath.Join("/proc", e.Name())) {
			pids = append(pids, pid)
		}
	}
	return pids
}
