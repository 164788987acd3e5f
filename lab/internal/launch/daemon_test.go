//go:build unix

package launch_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"example.com/walletlock/lab/internal/launch"
)

// startDaemon starts a redis-server daemon in a folder of the test's own
// on a free port, stopped when the test ends.
func startDaemon(t *testing.T, lines ...string) *launch.Daemon {
	t.Helper()
	needRedis(t)
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	d, err := launch.StartRedisDaemon(t.Context(), t.TempDir(), "127.0.0.1", port, lines...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Stop() })
	return d
}

// A daemon outlives the call that started it, Check knows it for what it
// is, and Stop ends it.
func TestRedisDaemon_startCheckStop(t *testing.T) {
	d := startDaemon(t, "requirepass "+launch.ConfQuote(`a "quoted" \ secret`))
	addr := "127.0.0.1:" + strconv.Itoa(d.Port)
	if !launch.Answers(addr) {
		t.Fatalf("nothing answers at %s", addr)
	}
	if err := d.Check(); err != nil {
		t.Fatalf("Check of a running daemon: %v", err)
	}
	if err := d.Stop(); err != nil || launch.Answers(addr) {
		t.Errorf("Stop = %v, and the daemon answers after it: %v", err, launch.Answers(addr))
	}
	if err := d.Check(); !errors.Is(err, launch.ErrNotOurs) {
		t.Errorf("Check of a stopped daemon = %v, want ErrNotOurs", err)
	}
}

// A Daemon names one process: its pid, start time, folder and port. Any
// record that differs in one of them, or a pid file that names another
// redis-server (a copy's, another port's), is not that process, and Stop
// signals nothing.
func TestDaemon_stopsOnlyTheProcessItNames(t *testing.T) {
	other := startDaemon(t) // a redis-server of someone else's, as far as the records below go
	ours := startDaemon(t)
	otherAddr := "127.0.0.1:" + strconv.Itoa(other.Port)
	tests := []struct {
		name string
		d    launch.Daemon
	}{
		{"another port", launch.Daemon{Kind: "redis-server", Port: ours.Port, Dir: other.Dir, Pid: other.Pid, Started: other.Started}},
		{"another folder", launch.Daemon{Kind: "redis-server", Port: other.Port, Dir: ours.Dir, Pid: other.Pid, Started: other.Started}},
		{"another start time", launch.Daemon{Kind: "redis-server", Port: other.Port, Dir: other.Dir, Pid: other.Pid, Started: "1"}},
		{"another program", launch.Daemon{Kind: "postgres", Port: other.Port, Dir: other.Dir, Pid: other.Pid, Started: other.Started}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.d.Stop(); !errors.Is(err, launch.ErrNotOurs) {
				t.Errorf("Stop = %v, want ErrNotOurs", err)
			}
			if !launch.Answers(otherAddr) {
				t.Fatal("Stop signalled a redis-server the record does not name")
			}
		})
	}
	t.Run("a pid file that names a redis-server on another port", func(t *testing.T) {
		// What a record without a pid (written before the server started)
		// falls back on: our folder, whose pid file names the other one.
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "redis.pid"), []byte(strconv.Itoa(other.Pid)+"\n"), 0o644)
		d := launch.Daemon{Kind: "redis-server", Port: ours.Port, Dir: dir}
		if err := d.Stop(); !errors.Is(err, launch.ErrNotOurs) {
			t.Errorf("Stop = %v, want ErrNotOurs", err)
		}
		if !launch.Answers(otherAddr) {
			t.Fatal("Stop signalled the redis-server a pid file named, on another port and in another folder")
		}
	})
	t.Run("the process itself, from its pid file", func(t *testing.T) {
		d := launch.Daemon{Kind: "redis-server", Port: ours.Port, Dir: ours.Dir}
		if err := d.Check(); err != nil || d.Pid != ours.Pid {
			t.Errorf("Check = %v, pid %d; want nil, pid %d", err, d.Pid, ours.Pid)
		}
	})
}
