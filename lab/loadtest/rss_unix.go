//go:build linux || darwin || freebsd || netbsd || openbsd

package loadtest

import (
	"runtime"
	"syscall"
)

// peakRSS returns the largest resident set size this process has had, in
// bytes: what the memory of a run with 1,000 workers is judged by.
func peakRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes on macOS
	}
	return int64(ru.Maxrss) * 1024 // kilobytes elsewhere
}
