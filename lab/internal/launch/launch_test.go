package launch_test

import (
	"io"
	"os"
	"os/exec"
	"runtime"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/launch"
)

func needRedis(t *testing.T) {
	t.Helper()
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
}

// A server of ours can be paused, resumed, restarted empty on its port
// and killed, and KillAll leaves nothing running.
func TestRedis_pauseResumeRestartKill(t *testing.T) {
	needRedis(t)
	if runtime.GOOS == "windows" {
		t.Skip("no SIGSTOP on this system")
	}
	var g launch.Group
	t.Cleanup(func() { g.KillAll(5 * time.Second) })
	s, err := g.StartRedis(t.Context(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !launch.Answers(s.Addr) {
		t.Fatalf("%s does not answer after StartRedis", s.Addr)
	}
	if err := s.Proc().Pause(); err != nil {
		t.Fatal(err)
	}
	if launch.Answers(s.Addr) {
		t.Error("a paused server answered")
	}
	if err := s.Proc().Resume(); err != nil {
		t.Fatal(err)
	}
	if !launch.Answers(s.Addr) {
		t.Error("a resumed server did not answer")
	}
	first := s.Proc()
	if err := s.Restart(t.Context()); err != nil {
		t.Fatal(err)
	}
	if first.Running() || !s.Proc().Running() || !launch.Answers(s.Addr) {
		t.Errorf("after Restart: old process running %v, new one running %v", first.Running(), s.Proc().Running())
	}
	if left := g.KillAll(5 * time.Second); len(left) > 0 {
		t.Errorf("KillAll left %v", left)
	}
	if s.Proc().Running() || launch.Answers(s.Addr) {
		t.Error("the server still runs after KillAll")
	}
	if err := first.Pause(); err == nil {
		t.Error("Pause of a process that exited: nil error, want ErrNotOurs")
	}
}

// A program's copy gets its orders on stdin, and every line it writes on
// stdout is there to read after it exits.
func TestStartProgram_stdoutOutlivesTheProcess(t *testing.T) {
	cat, err := exec.LookPath("cat")
	if err != nil {
		t.Skip(err)
	}
	var g launch.Group
	t.Cleanup(func() { g.KillAll(5 * time.Second) })
	p, err := g.StartProgram("cat", exec.Command(cat))
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(p.Stdin, "go\n")
	p.Stdin.Close()
	<-p.Exited()
	got, err := io.ReadAll(p.Stdout)
	p.Stdout.Close()
	if string(got) != "go\n" || err != nil {
		t.Errorf("stdout = %q, %v; want %q", got, err, "go\n")
	}
	if p.State() != "exit status 0" {
		t.Errorf("State = %q, want exit status 0", p.State())
	}
}
