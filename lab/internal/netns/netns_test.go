//go:build unix

package netns

import (
	"example.com/walletlock/lab/internal/launch"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Every id's names fit Linux's 15 characters, are found again as that
// id's, and no two ids share one.
func TestNetLinks_namesFitLinuxAndTellTheID(t *testing.T) {
	seen := map[string]int{}
	for id := 1; id <= maxNets; id++ {
		var names []netObj
		for _, l := range netLinks(id) {
			names = append(names, netObj{kind: "link", name: l})
		}
		for i := range maxHosts {
			names = append(names, netObj{kind: "namespace", name: netNamespace(id, i)})
		}
		for _, o := range names {
			if o.kind == "link" && len(o.name) > 15 {
				t.Errorf("%s is %d characters; Linux allows 15", o.name, len(o.name))
			}
			if got := objID(o); got != id {
				t.Errorf("objID(%s %s) = %d, want %d", o.kind, o.name, got, id)
			}
			if other, ok := seen[o.name]; ok {
				t.Errorf("ids %d and %d share %s", other, id, o.name)
			}
			seen[o.name] = id
		}
	}
	// The names of runs before ids were taken (a hash of the prefix)
	// are not the drills' to remove now.
	for _, o := range []netObj{{"namespace", "walletlock-wl7726c7e7-h0", ""}, {"link", "wl7726c7e7l", ""}, {"link", "eth0", ""}} {
		if got := objID(o); got != 0 {
			t.Errorf("objID(%s) = %d, want 0", o.name, got)
		}
	}
}

func TestWithHostPort(t *testing.T) {
	for _, tt := range []struct{ name, raw, want string }{
		{"a URL", "postgres://wl:secret@127.0.0.1:5432/walletlock?sslmode=disable",
			"postgres://wl:secret@198.19.7.254:40001/walletlock?sslmode=disable"},
		{"a URL that names its host again in the query", "postgresql://wl@localhost/walletlock?host=/tmp&port=5433",
			"postgresql://wl@198.19.7.254:40001/walletlock"},
		{"keywords", "host=127.0.0.1 port=5432 dbname=walletlock",
			"host=127.0.0.1 port=5432 dbname=walletlock host=198.19.7.254 port=40001"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := withHostPort(tt.raw, "198.19.7.254:40001")
			if err != nil || got != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPostgresAddr_refusesAUnixSocket(t *testing.T) {
	if _, err := PostgresAddr("host=/var/run/postgresql dbname=walletlock"); err == nil || !strings.Contains(err.Error(), "Unix socket") {
		t.Errorf("err = %v, want one that names the Unix socket", err)
	}
	if got, err := PostgresAddr("postgres://u:p@127.0.0.1:5432/db"); err != nil || got != "127.0.0.1:5432" {
		t.Errorf("got %q, %v", got, err)
	}
}

// A network whose making fails half-way is removed whole, and its id
// given back: here ip refuses the first host's uplink address.
func TestMakeNet_aFailedStepLeavesNothing(t *testing.T) {
	if err := CanPartition(); err != nil {
		t.Skip(err)
	}
	ipPath, _ := exec.LookPath("ip")
	dir := t.TempDir()
	script := "#!/bin/sh\ncase \"$*\" in *\"addr add\"*\"dev up0\"*) echo \"refused by the test\" >&2; exit 1;; esac\nexec " + ipPath + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "ip"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	n, _, err := MakeNet("test:makenet:", "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "refused by the test") {
		if n != nil {
			n.Remove()
		}
		t.Fatalf("MakeNet = %v, want the refused step's error", err)
	}
	objs, err := netObjects()
	if err != nil {
		t.Fatal(err)
	}
	mine := launch.Self().String()
	for _, o := range objs {
		if o.mark == mine {
			t.Errorf("%s %s is left", o.kind, o.name)
		}
	}
	files, _ := filepath.Glob(filepath.Join(netDir, "net-*"))
	for _, f := range files {
		if b, _ := os.ReadFile(f); strings.TrimSpace(string(b)) == mine {
			t.Errorf("the claim %s is left", f)
		}
	}
}
