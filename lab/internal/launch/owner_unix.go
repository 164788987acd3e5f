//go:build unix

package launch

// Who owns what a run leaves on the machine: a drill's or a judge's
// temporary folder, a drill's network. A run killed before its clean-up
// leaves them; a later run removes them only when it can prove that their
// owner is dead. The proof is an owner record, written where the thing
// lives: the run's pid, when that process started, the boot it started in
// and its pid namespace. The owner is dead when, on the same boot and in
// the same pid namespace, no process has that pid, or the one that has it
// started at another time, or it is a zombie. Anything else proves
// nothing, and the thing stays.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Owner identifies a process that owns something on the machine.
type Owner struct {
	pid   int
	start uint64 // clock ticks after boot, /proc/PID/stat's 22nd field; 0 without /proc
	boot  string // /proc/sys/kernel/random/boot_id; "" without /proc
	pidns string // the link /proc/self/ns/pid, "pid:[N]"; "" without /proc
}

// ownerTag starts every owner record (drills before the judge wrote
// "walletlock-drill", which still reads).
const ownerTag = "walletlock"

// Self is this process as an owner.
func Self() Owner {
	o := Owner{pid: os.Getpid()}
	o.start, _, _ = procStat(o.pid)
	o.boot, o.pidns = bootID(), pidNS()
	return o
}

// String is the owner record: one line of words, short enough for an
// interface's alias (255 bytes).
func (o Owner) String() string {
	return fmt.Sprintf("%s pid=%d start=%d boot=%s pidns=%s", ownerTag, o.pid, o.start, o.boot, o.pidns)
}

// ParseOwner reads an owner record, as String writes it.
func ParseOwner(s string) (Owner, error) {
	f := strings.Fields(s)
	if len(f) != 5 || (f[0] != ownerTag && f[0] != "walletlock-drill") {
		return Owner{}, fmt.Errorf("launch: not an owner record: %q", s)
	}
	var o Owner
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
		return Owner{}, fmt.Errorf("launch: not an owner record: %q", s)
	}
	return o, nil
}

// Dead reports whether the owner is provably gone (see the top of this
// file). false means alive, or not known.
func (o Owner) Dead() bool {
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
		return 0, false, fmt.Errorf("launch: no /proc: %w", errors.ErrUnsupported)
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
		return 0, false, fmt.Errorf("launch: /proc/%d/stat: %q", pid, b)
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

// ownerFile is the owner record in a run's temporary folder.
const ownerFile = "owner"

// OwnedTemp makes a run's temporary folder in the system's (TMPDIR),
// named prefix and random characters, and writes in it the owner record
// that lets a later run remove it once this process is gone (DeadTemps).
// The caller removes it when the run ends.
func OwnedTemp(prefix string) (string, error) {
	dir, err := os.MkdirTemp("", prefix+"*")
	if err != nil {
		return "", fmt.Errorf("make a temporary folder: %w", err)
	}
	// Written whole, then renamed: a folder whose record is not there
	// yet is left alone, never misread.
	tmp := filepath.Join(dir, ownerFile+".new")
	err = os.WriteFile(tmp, []byte(Self().String()+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, ownerFile))
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("write the owner of %s: %w", dir, err)
	}
	return dir, nil
}

// DeadTemps returns the temporary folders named prefix and more, of this
// user and not links, whose owner record names a dead process. A folder
// without a record (a run that has just made it) stays.
func DeadTemps(prefix string) []string {
	paths, _ := filepath.Glob(filepath.Join(os.TempDir(), prefix+"*"))
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
		if o, err := ParseOwner(string(b)); err == nil && o.Dead() {
			dead = append(dead, p)
		}
	}
	return dead
}
