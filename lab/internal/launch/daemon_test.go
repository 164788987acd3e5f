//go:build unix

package launch_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"example.com/walletlock/lab/internal/launch"
)

// A daemon outlives the call that started it, its pid file names it, and
// StopDaemon ends it; a pid file naming another program's process is not
// ours to signal.
func TestRedisDaemon_startFindStop(t *testing.T) {
	needRedis(t)
	dir := t.TempDir()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(dir, "redis.pid")
	t.Cleanup(func() { launch.StopDaemon(pidFile, "redis-server") })
	if err := launch.StartRedisDaemon(t.Context(), dir, "127.0.0.1", port, "requirepass "+launch.ConfQuote(`a "quoted" \ secret`)); err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if !launch.Answers(addr) {
		t.Fatalf("nothing answers at %s", addr)
	}
	if _, ok := launch.DaemonPid(pidFile, "redis-server"); !ok {
		t.Fatalf("DaemonPid(%s) = false for a running redis-server", pidFile)
	}
	if _, ok := launch.DaemonPid(pidFile, "postgres"); ok {
		t.Error("DaemonPid took a redis-server for a postgres")
	}
	mine := filepath.Join(dir, "mine.pid") // the test binary: not a redis-server
	os.WriteFile(mine, []byte(strconv.Itoa(os.Getpid())), 0o644)
	if launch.StopDaemon(mine, "redis-server") {
		t.Error("StopDaemon signalled a process that is not a redis-server")
	}
	if !launch.StopDaemon(pidFile, "redis-server") || launch.Answers(addr) {
		t.Error("the daemon still answers after StopDaemon")
	}
}
