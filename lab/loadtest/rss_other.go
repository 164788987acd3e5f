//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package loadtest

// peakRSS is unknown on this system: the report says 0.
func peakRSS() int64 { return 0 }
