// Command servers makes Redis and PostgreSQL reachable where the programs
// look for them (REDIS_URL or REDIS_ADDR, DATABASE_URL, read by
// internal/env, the one parser of them), and makes sure they let us
// log in with the configured credentials. The Makefile's up, down, status,
// redlock-up, redlock-down, cluster-up, cluster-down and cluster-status
// targets run it:
//
//	go run ./cmd/servers up|down|status|redlock-up|redlock-down|redlock-status|cluster-up|cluster-down|cluster-status
//
// `up` tries, in order:
//  1. the services already answer and let us log in: use them as they are.
//     One that answers but refuses us stops `up` with what it answered and
//     the two ways out (fix that server, or run ours on other ports);
//  2. a Docker engine answers (`docker info`) and the configuration is the
//     one docker-compose.yml publishes: docker compose up -d --wait;
//  3. local binaries: redis-server, and PostgreSQL's initdb and pg_ctl.
//     Missing ones are installed first with apt-get (as root, or through
//     sudo) or Homebrew, in one line saying what and why; where that cannot
//     be done, `up` stops with the command to run. On Windows it says what
//     to install instead.
//
// Local servers bind to 127.0.0.1 only (::1 when the address says so) and
// keep their state and records (record.go) in .services/ (git ignored);
// as root, PostgreSQL's data goes to a private temporary folder when the
// user postgres cannot reach the repository. `up` twice is harmless;
// `down` stops only what this checkout started. Everything is said on
// stderr, on lines that start with "services: ", through safe.Line; a
// command printed to paste quotes with safe.Quote. No password is ever
// put on a command line or printed. Commands that start or stop servers
// take turns in a checkout (see lock).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/env"
)

const usage = "usage: services up|down|status|redlock-up|redlock-down|redlock-status|cluster-up|cluster-down|cluster-status"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	// The first signal cancels ctx, and what was started is stopped again;
	// a second one ends the program at once.
	go func() { <-ctx.Done(); stop() }()
	env.Quiet()
	m := newMachine(os.Stderr)
	os.Exit(run(ctx, m, os.Args[1:]))
}

// machine is what the commands know about where they run. Tests make one
// of their own: another repository folder, another user id, another system.
type machine struct {
	root     string // the repository: docker-compose.yml, and .services/ for state
	uid      int    // who we are, for apt-get and sudo
	goos     string // runtime.GOOS
	terminal bool   // stdin is a terminal: sudo may ask for a password
	stderr   io.Writer
	prefix   string // "services: " or "cluster: "
}

func newMachine(stderr io.Writer) *machine {
	fi, err := os.Stdin.Stat()
	return &machine{root: repoRoot(), uid: os.Getuid(), goos: runtime.GOOS,
		terminal: err == nil && fi.Mode()&os.ModeCharDevice != 0, stderr: stderr}
}

// repoRoot is the folder above the working directory that holds go.mod,
// or the working directory: make runs us from the top of the repository.
func repoRoot() string {
	wd, _ := os.Getwd()
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if d == filepath.Dir(d) {
			return wd
		}
	}
}

// state is the path of name in .services/.
func (m *machine) state(name ...string) string {
	return filepath.Join(append([]string{m.root, ".services"}, name...)...)
}

// say writes one line on stderr, each argument through safe.Line: it may
// come from a server or a file.
func (m *machine) say(format string, args ...any) {
	for i, a := range args {
		switch a := a.(type) {
		case string:
			args[i] = safe.Line(a)
		case error:
			args[i] = safe.Line(a.Error())
		case fmt.Stringer:
			args[i] = safe.Line(a.String())
		}
	}
	fmt.Fprintf(m.stderr, "%s%s\n", m.prefix, fmt.Sprintf(format, args...))
}

// errSaid ends a command whose reasons are already on stderr.
var errSaid = errors.New("said")

func run(ctx context.Context, m *machine, args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(m.stderr, usage)
		return 2
	}
	commands := map[string]func(context.Context) error{
		"up": m.up, "down": m.down, "status": m.status,
		"redlock-up": m.redlockUp, "redlock-down": m.redlockDown, "redlock-status": m.redlockStatus,
		"cluster-up": m.clusterUp, "cluster-down": m.clusterDown, "cluster-status": m.clusterStatus,
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintln(m.stderr, usage)
		return 2
	}
	m.prefix = "services: "
	if strings.HasPrefix(args[0], "cluster-") {
		m.prefix = "cluster: "
	}
	if err := os.MkdirAll(m.state(), 0o755); err != nil {
		m.say("%v", err)
		return 1
	}
	if !strings.HasSuffix(args[0], "status") {
		unlock, err := m.lock(ctx)
		if err != nil {
			m.say("%s", err)
			return 1
		}
		defer unlock()
	}
	err := cmd(ctx)
	if err != nil && ctx.Err() != nil {
		// What failed, failed because of the signal: say that, not how.
		m.say("interrupted; nothing this run started is left running")
		return 1
	}
	if m.sayAll(err) {
		return 1
	}
	return 0
}

// sayAll says each error that err holds (errors.Join's too) and that is
// not on stderr already, and reports whether there was any.
func (m *machine) sayAll(err error) bool {
	if err == nil {
		return false
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			m.sayAll(e)
		}
		return true
	}
	if !errors.Is(err, errSaid) {
		m.say("%s", err)
	}
	return true
}
