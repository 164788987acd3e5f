//go:build unix && !linux

package launch

import (
	"errors"
	"os/exec"
	"strconv"
	"strings"
)

// procInfo is what the system tells about a running process.
type procInfo struct {
	name    string // its program's name
	started string // when it started, as ps says it
	dir     string // its working directory
}

// readProc asks ps (and lsof, for the working directory) about the
// process pid. A process that has exited, even one not reaped yet, is an
// error.
func readProc(pid int) (procInfo, error) {
	p := strconv.Itoa(pid)
	out, err := exec.Command("ps", "-o", "stat=", "-o", "lstart=", "-o", "comm=", "-p", p).Output()
	f := strings.Fields(string(out))
	// stat, then lstart's five words (Mon Dec  3 14:18:02 2025), then comm.
	if err != nil || len(f) < 7 || strings.HasPrefix(f[0], "Z") {
		return procInfo{}, errors.New("launch: no process " + p)
	}
	info := procInfo{started: strings.Join(f[1:6], " "), name: strings.Join(f[6:], " ")}
	if i := strings.LastIndexByte(info.name, '/'); i >= 0 {
		info.name = info.name[i+1:]
	}
	if out, err := exec.Command("lsof", "-a", "-p", p, "-d", "cwd", "-Fn").Output(); err == nil {
		for line := range strings.SplitSeq(string(out), "\n") {
			if d, ok := strings.CutPrefix(line, "n"); ok {
				info.dir = d
			}
		}
	}
	return info, nil
}

// inDir reports whether the working directory of the process pid is dir.
func inDir(pid int, dir string) bool {
	p, err := readProc(pid)
	return err == nil && p.dir != "" && sameDir(p.dir, dir)
}

// listens reports whether the process pid holds a TCP socket that
// listens on port, as lsof sees it.
func listens(pid, port int) bool {
	out, err := exec.Command("lsof", "-a", "-n", "-P", "-p", strconv.Itoa(pid), "-iTCP:"+strconv.Itoa(port), "-sTCP:LISTEN", "-t").Output()
	return err == nil && strings.TrimSpace(string(out)) != ""
}
