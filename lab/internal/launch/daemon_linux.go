package launch

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
)

// procInfo is what the system tells about a running process.
type procInfo struct {
	name    string // its program's name
	started string // when it started: clock ticks after boot, on Linux
	dir     string // its working directory
}

// readProc reads what /proc tells about the process pid. A process that
// has exited, even one not reaped yet, is an error.
func readProc(pid int) (procInfo, error) {
	base := "/proc/" + strconv.Itoa(pid)
	stat, err := os.ReadFile(base + "/stat")
	if err != nil {
		return procInfo{}, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses, so
	// the fields after it are counted from the last ')'.
	s := string(stat)
	open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || end < open {
		return procInfo{}, errors.New("launch: unreadable " + base + "/stat")
	}
	f := strings.Fields(s[end+1:])
	// f[0] is the state (field 3), f[19] the start time (field 22).
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return procInfo{}, errors.New("launch: process " + strconv.Itoa(pid) + " has exited")
	}
	dir, _ := os.Readlink(base + "/cwd")
	return procInfo{name: s[open+1 : end], started: f[19], dir: dir}, nil
}

// inDir reports whether the working directory of the process pid is dir.
// /proc/PID/cwd leads to the folder itself, whatever path it is reached by.
func inDir(pid int, dir string) bool {
	return sameDir("/proc/"+strconv.Itoa(pid)+"/cwd", dir)
}

// listens reports whether the process pid holds a TCP socket that
// listens on port: one of the listening sockets that /proc/PID/net/tcp
// (and tcp6) list for port is among its open files.
func listens(pid, port int) bool {
	base := "/proc/" + strconv.Itoa(pid)
	inodes := map[string]bool{}
	for _, table := range []string{"/net/tcp", "/net/tcp6"} {
		f, err := os.Open(base + table)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(fields[1], ":")
			if p, err := strconv.ParseUint(hexPort, 16, 16); ok && err == nil && int(p) == port {
				inodes["socket:["+fields[9]+"]"] = true
			}
		}
		f.Close()
	}
	if len(inodes) == 0 {
		return false
	}
	fds, err := os.ReadDir(base + "/fd")
	if err != nil {
		return false
	}
	for _, fd := range fds {
		if link, err := os.Readlink(base + "/fd/" + fd.Name()); err == nil && inodes[link] {
			return true
		}
	}
	return false
}
