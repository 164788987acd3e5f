//go:build unix

package drill

// Who owns what a drill leaves on the machine: its temporary folder and
// its network. A drill killed before its clean-up (SIGKILL, a power cut)
// leaves both; a later drill removes them only when it can prove that
// their owner is dead, never another live run's. The proof is an owner
// record, written where the thing lives: the drill's pid, when that
// process started, the boot it started in and its pid namespace. The
// owner is dead when, on the same boot and in the same pid namespace, no
// process has that pid, or the one that has it started at another time
// (the pid was reused), or it is a zombie. Anything else (another boot,
// another pid namespace, a record that cannot be read) proves nothing,
// and the thing stays.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// owner identifies a drill process.
type owner struct {
	pid   int
	start uint64 // clock ticks after boot, /proc/PID/stat's 22nd field; 0 without /proc
	boot  string // /proc/sys/kernel/random/boot_id; "" without /proc
	pidns string // the link /proc/self/ns/pid, "pid:[N]"; "" without /proc
}

// ownerTag starts every owner record.
const ownerTag = "walletlock-drill"

// self is this process as an owner.
func self() owner {
	o := owner{pid: os.Getpid()}
	o.start, _, _ = procStat(o.pid)
	o.boot, o.pidns = bootID(), pidNS()
	return o
}

// String is the owner record: one line of words, short enough for an
// interface's alias (255 bytes).
func (o owner) String() string {
	return fmt.Sprintf("%s pid=%d start=%d boot=%s pidns=%s", ownerTag, o.pid, o.start, o.boot, o.pidns)
}

// parseOwner reads an owner record, as String writes it.
func parseOwner(s string) (owner, error) {
	f := strings.Fields(s)
	if len(f) != 5 || f[0] != ownerTag {
		return owner{}, fmt.Errorf("drill: not an owner record: %q", s)
	}
	var o owner
	var err1, err2 error
	for _, kv := range f[1:] {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "pid":
			o.pid, err1 = strconv.Atoi(v)
		case "start":
			o.start, err2 = strconv.ParseUint(v, 10, 64)
		case "boot":
			o.boot = v
		case "pidns":
			o.pidns = v
		}
	}
	if err1 != nil || err2 != nil || o.pid <= 0 {
		return owner{}, fmt.Errorf("drill: not an owner record: %q", s)
	}
	return o, nil
}

// dead reports whether the owner is provably gone (see the top of this
// file). false means alive, or not known.
func (o owner) dead() bool {
	if o.boot != bootID() || o.pidns != pidNS() {
		return false // another boot or pid namespace: its pids are not ours to read
	}
	start, zombie, err := procStat(o.pid)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return true
	case err == nil:
		return zombie || (o.start != 0 && start != o.start)
	}
	// No /proc: only "no such process" proves anything.
	return errors.Is(syscall.Kill(o.pid, 0), syscall.ESRCH)
}

// procStat returns when process pid started and whether it is a zombie
// (or dying), from /proc. Its error is os.ErrNotExist when /proc has no
// such process, and another error without /proc.
func procStat(pid int) (start uint64, zombie bool, err error) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		return 0, false, fmt.Errorf("drill: no /proc: %w", errors.ErrUnsupported)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
			return 0, false, os.ErrNotExist
		}
		return 0, false, err
	}
	// pid (comm) state ppid ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	if i < 0 || len(f) < 20 {
		return 0, false, fmt.Errorf("drill: /proc/%d/stat: %q", pid, b)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return start, f[0] == "Z" || f[0] == "X", err
}

func bootID() string {
	b, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	return strings.TrimSpace(string(b))
}

func pidNS() string {
	l, _ := os.Readlink("/proc/self/ns/pid")
	return l
}

// The temporary folder of a run.
const (
	tempPattern = "walletlock-drill-" // os.MkdirTemp's, in os.TempDir()
	ownerFile   = "owner"             // in it: the owner record
)

// MkdirTemp makes the run's folder for its servers' files in the
// system's temporary folder (TMPDIR), and writes in it the owner record
// that lets a later drill remove it once this process is gone
// (RemoveLeftovers). The caller removes it when the run ends.
func MkdirTemp() (string, error) {
	dir, err := os.MkdirTemp("", tempPattern+"*")
	if err != nil {
		return "", fmt.Errorf("drill: make a temporary folder: %w", err)
	}
	// Written whole, then renamed: a folder whose record is not there
	// yet is left alone, never misread.
	tmp := filepath.Join(dir, ownerFile+".new")
	err = os.WriteFile(tmp, []byte(self().String()+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ownerFile))
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("drill: write the owner of %s: %w", dir, err)
	}
	return dir, nil
}

// deadFolders returns the drills' temporary folders whose owner is dead:
// a folder of this user, not a link, whose owner record names a dead
// process. A folder without a record (a drill that has just made it, or
// an older drill's) stays.
func deadFolders() []string {
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPattern+"*"))
	var dead []string
	for _, p := range paths {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		rec := filepath.Join(p, ownerFile)
		if ri, err := os.Lstat(rec); err != nil || !ri.Mode().IsRegular() || ri.Size() > 512 {
			continue
		}
		b, err := os.ReadFile(rec)
		if err != nil {
			continue
		}
		if o, err := parseOwner(string(b)); err == nil && o.dead() {
			dead = append(dead, p)
		}
	}
	return dead
}

// RemoveLeftovers removes what drills killed before their clean-up left
// and whose owner is provably dead: their temporary folders (in this
// process's TMPDIR) and, where this process can make network namespaces
// (CanPartition), their networks. It returns one line that says what it
// removed, "" when nothing; what it could not remove it names in err.
// Nothing of a live drill is touched.
func RemoveLeftovers() (string, error) {
	var removed []string
	var errs []error
	for _, p := range deadFolders() {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("drill: remove %s: %w", p, err))
			continue
		}
		removed = append(removed, "folder "+p)
	}
	if CanPartition() == nil {
		nets, err := removeDeadNets()
		removed = append(removed, nets...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(removed) == 0 {
		return "", errors.Join(errs...)
	}
	return "removed what drills killed before their clean-up left: " + strings.Join(removed, ", "), errors.Join(errs...)
}
