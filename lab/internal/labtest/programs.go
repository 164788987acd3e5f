package labtest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/env"
)

// Program is the signature of every program's run function: main hands it
// a context, the arguments and the two streams, and exits with its result.
type Program func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// BadFlag is a command line a program must refuse.
type BadFlag struct {
	Name string   // the subtest's name
	Args []string // the command line
	Want string   // part of the one line on stderr, such as the flag's name
}

// unreachable is an address where no server answers: port 1 on loopback
// refuses at once, so the tests wait for no timeout.
const unreachable = "127.0.0.1:1"

// secret is the password in the URLs the unreachable tests use; it must
// never be shown.
const secret = "s3cret-never-shown"

// hangGuard is how long a program may take to give up on a service: twice
// the bound wallet promises plus room for a busy machine. It catches a
// hang; it is not a speed test.
const hangGuard = 2*env.ConnectTimeout + 4*time.Second

// name returns the program's name, which starts every line it writes to
// stderr: the folder go test runs its tests in, cmd/NAME.
func name(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Base(wd)
}

// BadFlags runs each case as a subtest. A program must refuse the command
// line before doing anything: exit 2, nothing on stdout, and one line on
// stderr that starts with its name and contains Want.
func BadFlags(t *testing.T, run Program, cases []BadFlag) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) { inOneLine(t, run, c.Args, 2, c.Want) })
	}
}

// Help requires -h to exit 0 with the usage line and the flags on stdout
// and nothing on stderr.
func Help(t *testing.T, run Program) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if code := run(t.Context(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Errorf("run(-h) = %d, want 0", code)
	}
	usage := "usage: go run ./cmd/" + name(t) + " [flags]\n"
	if out := stdout.String(); !strings.HasPrefix(out, usage) || !strings.Contains(out, "\n  -") {
		t.Errorf("run(-h): stdout = %q, want %q and the flags", out, usage)
	}
	if stderr.Len() > 0 {
		t.Errorf("run(-h): stderr = %q, want nothing", stderr.String())
	}
}

// FailsInOneLine runs the program with args and requires what a program
// does when it cannot go on: exit 1 without hanging, nothing on stdout,
// and one line on stderr that starts with its name and contains each of
// wants. It returns that line.
func FailsInOneLine(t *testing.T, run Program, args []string, wants ...string) string {
	t.Helper()
	return inOneLine(t, run, args, 1, wants...)
}

// inOneLine runs the program with args and requires exit code code within
// hangGuard, nothing on stdout, and one line on stderr that starts with
// its name and contains each of wants. It returns that line.
func inOneLine(t *testing.T, run Program, args []string, code int, wants ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	if got := run(t.Context(), args, &stdout, &stderr); got != code {
		t.Errorf("run(%q) = %d, want %d", args, got, code)
	}
	if took := time.Since(start); took > hangGuard {
		t.Errorf("run(%q) took %v to give up, want at most %v", args, took, hangGuard)
	}
	if stdout.Len() > 0 {
		t.Errorf("run(%q): stdout = %q, want nothing", args, stdout.String())
	}
	msg := stderr.String()
	prog := name(t)
	if strings.Count(msg, "\n") != 1 || !strings.HasSuffix(msg, "\n") || !strings.HasPrefix(msg, prog+": ") {
		t.Errorf("run(%q): stderr = %q, want one line starting %q", args, msg, prog+": ")
	}
	for _, want := range wants {
		if !strings.Contains(msg, want) {
			t.Errorf("run(%q): stderr = %q, want it to contain %q", args, msg, want)
		}
	}
	return msg
}

// RedisUnreachable points the program at a Redis that does not answer,
// by REDIS_ADDR and then by a REDIS_URL with a password, and requires
// FailsInOneLine with the address and `make up`, never the password.
func RedisUnreachable(t *testing.T, run Program, args ...string) {
	t.Helper()
	for _, env := range []struct{ name, url, addr string }{
		{"REDIS_ADDR", "", unreachable},
		{"REDIS_URL", "redis://walletlock:" + secret + "@" + unreachable + "/0", ""},
	} {
		t.Run(env.name, func(t *testing.T) {
			t.Setenv("REDIS_URL", env.url)
			t.Setenv("REDIS_ADDR", env.addr)
			if msg := FailsInOneLine(t, run, args, unreachable, "make up"); strings.Contains(msg, secret) {
				t.Errorf("stderr shows the password: %q", msg)
			}
		})
	}
}

// PostgresUnreachable points DATABASE_URL, password included, at a
// PostgreSQL that does not answer, and requires FailsInOneLine with the
// address and `make up`, never the password.
func PostgresUnreachable(t *testing.T, run Program, args ...string) {
	t.Helper()
	t.Setenv("DATABASE_URL", "postgres://walletlock:"+secret+"@"+unreachable+"/walletlock?sslmode=disable")
	if msg := FailsInOneLine(t, run, args, unreachable, "make up"); strings.Contains(msg, secret) {
		t.Errorf("stderr shows the password: %q", msg)
	}
}
