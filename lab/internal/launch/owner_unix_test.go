//go:build unix

package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// deadProcess returns the owner record of a process that has ended and
// been reaped.
func deadProcess(t *testing.T) Owner {
	t.Helper()
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip(err)
	}
	o := Self()
	o.pid = cmd.Process.Pid
	cmd.Wait()
	return o
}

func TestOwner_recordReadsBack(t *testing.T) {
	me := Self()
	got, err := ParseOwner(me.String())
	if err != nil || got != me {
		t.Errorf("ParseOwner(%q) = %+v, %v; want %+v", me.String(), got, err, me)
	}
	for _, bad := range []string{"", "walletlock-drill", "walletlock pid=x start=1 boot=b pidns=p", "other pid=1 start=1 boot=b pidns=p"} {
		if _, err := ParseOwner(bad); err == nil {
			t.Errorf("ParseOwner(%q) took it for an owner record", bad)
		}
	}
}

// An owner is dead only where that can be proven: its pid is gone, or
// holds a process that started at another time. Another boot or pid
// namespace proves nothing.
func TestOwner_deadOnlyWhenProvablyGone(t *testing.T) {
	if _, _, err := procStat(os.Getpid()); err != nil {
		t.Skipf("no /proc: %v", err)
	}
	me := Self()
	reused, otherBoot, otherNS := me, me, me
	reused.start++
	otherBoot.boot, otherNS.pidns = "another-boot", "pid:[1]"
	for _, tt := range []struct {
		name string
		o    Owner
		dead bool
	}{
		{"this process", me, false},
		{"a process that ended", deadProcess(t), true},
		{"its pid, taken by a process that started later", reused, true},
		{"another boot", otherBoot, false},
		{"another pid namespace", otherNS, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.o.Dead(); got != tt.dead {
				t.Errorf("dead() = %v, want %v for %s", got, tt.dead, tt.o)
			}
		})
	}
}

// A later run removes a folder whose owner is dead, and none of a live
// owner, one without a record, or a link.
func TestDeadTemps_onlyThoseOfDeadOwners(t *testing.T) {
	const tempPattern = "walletlock-test-"
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	live, err := OwnedTemp(tempPattern)
	if err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(tmp, tempPattern+"dead")
	noRecord := filepath.Join(tmp, tempPattern+"norecord")
	for _, d := range []string{dead, noRecord} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dead, ownerFile), []byte(deadProcess(t).String()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dead, filepath.Join(tmp, tempPattern+"link")); err != nil {
		t.Fatal(err)
	}
	if got := DeadTemps(tempPattern); !slices.Equal(got, []string{dead}) {
		t.Errorf("DeadTemps = %q, want only %q (live %q)", got, dead, live)
	}
}
