package judge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/launch"
)

// A lock library's repo calls the kit from a test of its own, in a
// module of its own: testdata/kit holds two such locks, one with a
// Release in one script and one that checks the token (GET) and deletes
// the key (DEL) in two commands. go test there passes the first, and
// fails the second on release-own, naming the command it stopped after.
func TestKit_judgesALockInAModuleOfItsOwn(t *testing.T) {
	if _, err := launch.RedisBinary(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	testenv.Postgres(t)
	lab, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/kit")); err != nil {
		t.Fatal(err)
	}
	gomod := "module example.org/locks\n\ngo 1.26.0\n\nrequire (\n\texample.com/walletlock v0.0.0\n\texample.com/walletlock/lab v0.0.0\n\tgithub.com/redis/go-redis/v9 v9.23.0\n)\n\n" +
		"replace example.com/walletlock => " + filepath.Dir(lab) + "\n\nreplace example.com/walletlock/lab => " + lab + "\n"
	var sum []byte
	for _, f := range []string{filepath.Join(lab, "go.sum"), filepath.Join(filepath.Dir(lab), "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sum = append(sum, b...)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		pkg  string
		pass bool
		want []string
	}{
		{"good", true, []string{"--- PASS: TestJudge/release-own"}},
		{"checkthenact", false, []string{"--- FAIL: TestJudge/release-own", "stopped it after its 1st command (GET", "compare and delete in one script"}},
	} {
		t.Run(tt.pkg, func(t *testing.T) {
			cmd := exec.Command("go", "test", "-count=1", "-v", "./"+tt.pkg)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
			out, err := cmd.CombinedOutput()
			if (err == nil) != tt.pass {
				t.Errorf("go test ./%s: %v, want pass %v:\n%s", tt.pkg, err, tt.pass, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("go test ./%s does not say %q:\n%s", tt.pkg, w, out)
				}
			}
		})
	}
}
