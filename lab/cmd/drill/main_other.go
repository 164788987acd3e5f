//go:build !unix

// The drill pauses, kills and restarts real processes with signals and
// process groups, which only Unix systems have.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "drill: needs Linux, macOS or another Unix: it pauses and kills real processes with SIGSTOP and SIGKILL")
	os.Exit(1)
}
