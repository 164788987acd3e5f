//go:build unix

// cmd/servers stands between a new user and a working `make demo`. These
// tests run it, in a repository folder of their own (so its .services/
// state is theirs), against servers they start on free loopback ports: a
// Redis that wants a password, a PostgreSQL without our role, and a PATH
// where redis-server is missing and apt-get and sudo are stand-ins that
// only write down what they were asked.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
)

// The passwords of the servers these tests start. None may ever appear in
// what cmd/servers prints.
const (
	redisSecret = "redis-secret-4b1d"
	pgSecret    = "pg-secret-9e27"
	wrongSecret = "wrong-secret-51c3"
)

var secrets = []string{redisSecret, pgSecret, wrongSecret}

// binaries finds each program on PATH or in /usr/lib/postgresql/*/bin, or
// skips the test (fails it under CI) when one is missing.
func binaries(t *testing.T, names ...string) map[string]string {
	t.Helper()
	found := map[string]string{}
	pgDirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			found[name] = p
			continue
		}
		for i := len(pgDirs) - 1; i >= 0; i-- {
			if p := filepath.Join(pgDirs[i], name); isExecutable(p) {
				found[name] = p
				break
			}
		}
		if found[name] == "" {
			msg := name + " not found: install redis-server and postgresql (make up does)"
			if os.Getenv("CI") != "" {
				t.Fatal(msg + "; CI is set, so this fails instead of skipping")
			}
			t.Skip(msg)
		}
	}
	return found
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&0o111 != 0
}

func testPort(t *testing.T) int {
	t.Helper()
	port, err := launch.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func answers(port int) bool {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second)
	if err == nil {
		c.Close()
	}
	return err == nil
}

func waitForPort(t *testing.T, port int, what string) {
	t.Helper()
	for range 100 {
		if answers(port) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s did not answer on port %d within 10 s", what, port)
}

// startRedis starts a redis-server that wants redisSecret, stopped when the
// test ends.
func startRedis(t *testing.T, bin string) int {
	t.Helper()
	port := testPort(t)
	cmd := exec.Command(bin, "-") // the configuration comes on stdin
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(fmt.Sprintf("bind 127.0.0.1\nport %d\nsave \"\"\nappendonly no\nrequirepass %s\n", port, redisSecret))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitForPort(t, port, "redis-server")
	return port
}

// postgresUser is who runs initdb and postgres: the postgres user when the
// test runs as root (they refuse root), nil (ourselves) otherwise.
func postgresUser(t *testing.T) *syscall.Credential {
	t.Helper()
	if os.Getuid() != 0 {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("running as root needs a postgres user: %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
}

// startPostgres starts a PostgreSQL with one role, roleonly (password
// pgSecret), and no database of that name; stopped and removed when the
// test ends.
func startPostgres(t *testing.T, bins map[string]string) int {
	t.Helper()
	dir, err := os.MkdirTemp("", "walletlock-pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	who := postgresUser(t)
	if who != nil {
		if err := os.Chown(dir, int(who.Uid), int(who.Gid)); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(bins["initdb"], "-D", data, "-U", "postgres", "--auth-local=trust",
		"--auth-host=scram-sha-256", "--encoding=UTF8", "--no-locale", "--no-instructions")
	initdb.Dir = dir
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: who}
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	port := testPort(t)
	server := exec.Command(bins["postgres"], "-D", data, "-p", strconv.Itoa(port), "-k", dir,
		"-c", "listen_addresses=127.0.0.1", "-c", "fsync=off")
	server.Dir = dir
	server.SysProcAttr = &syscall.SysProcAttr{Credential: who}
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		server.Process.Signal(syscall.SIGINT) // fast shutdown
		done := make(chan struct{})
		go func() { server.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			server.Process.Kill()
			<-done
		}
	})
	waitForPort(t, port, "postgres")
	// Over the socket, where initdb trusts everybody; the password goes in
	// on stdin.
	for i := 0; ; i++ {
		psql := exec.Command(bins["psql"], "-h", dir, "-p", strconv.Itoa(port), "-U", "postgres", "-d", "postgres", "-qX", "-v", "ON_ERROR_STOP=1")
		// The superuser gets a password too, for a printed fix to be run
		// with PGPASSWORD.
		psql.Stdin = strings.NewReader("CREATE ROLE roleonly LOGIN PASSWORD '" + pgSecret + "'; ALTER ROLE postgres PASSWORD '" + pgSecret + "';\n")
		out, err := psql.CombinedOutput()
		if err == nil {
			break
		}
		if i == 50 {
			t.Fatalf("psql CREATE ROLE: %v\n%s", err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return port
}

// repoCopy returns a folder that stands for the repository, so that the
// program's .services/ state is the test's own; whatever it started there
// is stopped when the test ends.
func repoCopy(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	t.Cleanup(func() {
		// As root, PostgreSQL's data may be in a temporary folder, which
		// down removes with the server it stops.
		home := pgHome(t, root)
		runServices(t, root, nil, "", "down")
		if strings.HasPrefix(filepath.Base(home), "walletlock-pg.") {
			if _, gone := os.Stat(home); gone == nil {
				t.Errorf("down left PostgreSQL's temporary folder %s behind", home)
			}
			os.RemoveAll(home)
		}
	})
	return root
}

// pgHome is the folder of the PostgreSQL that up started in root, as its
// record names it, or "".
func pgHome(t *testing.T, root string) string {
	t.Helper()
	var rec struct{ Dir string }
	raw, err := os.ReadFile(filepath.Join(root, ".services", "pg.started"))
	if err != nil || json.Unmarshal(raw, &rec) != nil || rec.Dir == "" {
		return ""
	}
	return filepath.Dir(rec.Dir)
}

// configVars are the variables the program reads; runServices drops the
// test's own.
func configVar(name string) bool {
	switch name {
	case "REDIS_URL", "REDIS_ADDR", "REDIS_CA_FILE", "DATABASE_URL", "REDLOCK_ADDRS", "CLUSTER_PORT":
		return true
	}
	return strings.HasPrefix(name, "PG")
}

// runServices runs the program in root with the configuration env (any
// configuration variable of the test's own is dropped) and PATH, when not
// empty, as the user uid of the machine (see runOn).
func runServices(t *testing.T, root string, env []string, path string, args ...string) (stderr string, code int) {
	t.Helper()
	return runOn(t, &machine{root: root, uid: os.Getuid(), goos: runtime.GOOS}, env, path, args...)
}

// runOn runs the program on m, in process: the environment is set for
// the call and put back after it, so these tests do not run in parallel.
func runOn(t *testing.T, m *machine, env []string, path string, args ...string) (stderr string, code int) {
	t.Helper()
	r := runEach(t, context.Background(), env, path, []*machine{m}, args...)
	return r[0].stderr, r[0].code
}

// result is what one run of the program said, and its exit code.
type result struct {
	stderr string
	code   int
}

// runEach runs the program on each of ms at once, with the environment
// (see runOn) and ctx of them all, and returns what each said.
func runEach(t *testing.T, ctx context.Context, env []string, path string, ms []*machine, args ...string) []result {
	t.Helper()
	saved := os.Environ()
	defer func() {
		os.Clearenv()
		for _, kv := range saved {
			k, v, _ := strings.Cut(kv, "=")
			os.Setenv(k, v)
		}
	}()
	for _, kv := range saved {
		if k, _, _ := strings.Cut(kv, "="); configVar(k) {
			os.Unsetenv(k)
		}
	}
	if path != "" {
		os.Setenv("PATH", path)
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	// From a folder of 0700s, closed to the user postgres, as a clone
	// inside `mktemp -d` is: what runs as that user must not start here.
	closed, err := os.MkdirTemp("", "walletlock-cwd-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(closed)
	wd, _ := os.Getwd()
	if err := os.Chdir(closed); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	out := make([]result, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Go(func() {
			var buf bytes.Buffer
			m.stderr = &buf
			out[i].code = run(ctx, m, args)
			out[i].stderr = buf.String()
		})
	}
	wg.Wait()
	return out
}

// checkQuiet requires every line to be the program's and no password
// anywhere. (It writes nothing on stdout, which may be JSON: the machine
// has no stdout to write to.)
func checkQuiet(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
		if line != "" && !strings.HasPrefix(line, "services: ") && !strings.HasPrefix(line, "cluster: ") {
			t.Errorf("stderr line %q does not start with %q", line, "services: ")
		}
	}
	for _, s := range secrets {
		if strings.Contains(stderr, s) {
			t.Errorf("the output shows a password:\n%s", stderr)
		}
	}
}

func TestServices_refusals(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	redisPort := startRedis(t, bins["redis-server"])
	pgPort := startPostgres(t, bins)

	redisAddr := fmt.Sprintf("127.0.0.1:%d", redisPort)
	redisOK := "REDIS_URL=redis://:" + redisSecret + "@" + redisAddr
	pgAt := func(user, db string) string {
		return fmt.Sprintf("DATABASE_URL=postgres://%s:%s@127.0.0.1:%d/%s?sslmode=disable", user, pgSecret, pgPort, db)
	}
	pgOK := pgAt("roleonly", "postgres")

	t.Run("servers that let us in are used as they are", func(t *testing.T) {
		root := repoCopy(t)
		for _, cmd := range []string{"status", "up"} {
			stderr, code := runServices(t, root, []string{redisOK, pgOK}, "", cmd)
			if code != 0 {
				t.Errorf("%s: exit %d, want 0\n%s", cmd, code, stderr)
			}
			checkQuiet(t, stderr)
		}
		if started, _ := filepath.Glob(filepath.Join(root, ".services", "redis-*")); len(started) > 0 {
			t.Error("up started a redis-server although one lets us in")
		}
	})

	tests := []struct {
		name   string
		env    []string
		answer string // the line naming the server and what it answered
		fix    string // the way out on that server
		own    string // part of the variables for servers of our own
	}{
		{
			name:   "a Redis that wants a password we do not give",
			env:    []string{"REDIS_ADDR=" + redisAddr, pgOK},
			answer: "Redis at " + redisAddr + " refuses us: NOAUTH Authentication required.",
			fix:    "export REDIS_URL='redis://:PASSWORD@" + redisAddr + "'",
			own:    "export REDIS_ADDR=localhost:",
		},
		{
			name:   "a Redis that refuses our password",
			env:    []string{"REDIS_URL=redis://:" + wrongSecret + "@" + redisAddr, pgOK},
			answer: "Redis at " + redisAddr + " refuses us: WRONGPASS invalid username-password pair",
			fix:    "export REDIS_URL='redis://USER:PASSWORD@" + redisAddr + "'",
			own:    "export REDIS_URL= REDIS_ADDR=localhost:",
		},
		{
			name:   "a PostgreSQL without our role",
			env:    []string{redisOK, pgAt("walletlock", "walletlock")},
			answer: fmt.Sprintf(`PostgreSQL at 127.0.0.1:%d refuses us: password authentication failed for user "walletlock"`, pgPort),
			fix:    fmt.Sprintf(`psql -h '127.0.0.1' -p %d -U postgres -c 'CREATE ROLE walletlock LOGIN PASSWORD '\''<password>'\''' -c 'CREATE DATABASE walletlock OWNER walletlock'`, pgPort),
			own:    "DATABASE_URL='postgres://walletlock:walletlock@localhost:",
		},
		{
			// walletlock is the public default: it may be shown, and must
			// not blank out the user's name.
			name:   "a PostgreSQL without our role, with the default credentials",
			env:    []string{redisOK, fmt.Sprintf("DATABASE_URL=postgres://walletlock:walletlock@127.0.0.1:%d/walletlock?sslmode=disable", pgPort)},
			answer: fmt.Sprintf(`PostgreSQL at 127.0.0.1:%d refuses us: password authentication failed for user "walletlock"`, pgPort),
			fix:    fmt.Sprintf(`psql -h '127.0.0.1' -p %d -U postgres -c 'CREATE ROLE walletlock LOGIN PASSWORD '\''walletlock'\''' -c 'CREATE DATABASE walletlock OWNER walletlock'`, pgPort),
			own:    "DATABASE_URL='postgres://walletlock:walletlock@localhost:",
		},
		{
			name:   "a PostgreSQL without our database",
			env:    []string{redisOK, pgAt("roleonly", "roleonly")},
			answer: fmt.Sprintf(`PostgreSQL at 127.0.0.1:%d refuses us: database "roleonly" does not exist`, pgPort),
			fix:    fmt.Sprintf(`psql -h '127.0.0.1' -p %d -U postgres -c 'CREATE DATABASE roleonly OWNER roleonly'`, pgPort),
			own:    "DATABASE_URL='postgres://walletlock:walletlock@localhost:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := repoCopy(t)
			for _, cmd := range []string{"up", "status"} {
				stderr, code := runServices(t, root, tt.env, "", cmd)
				if code != 1 {
					t.Errorf("%s: exit %d, want 1", cmd, code)
				}
				checkQuiet(t, stderr)
				answer := tt.answer
				if cmd == "status" {
					// status says it in its own line for that server.
					server, said, _ := strings.Cut(tt.answer, " at ")
					answer = server + ": answers at " + strings.Replace(said, " refuses us:", " but refuses us:", 1)
				}
				for _, want := range []string{answer, tt.fix, tt.own} {
					if !strings.Contains(stderr, want) {
						t.Errorf("%s: stderr does not say %q:\n%s", cmd, want, stderr)
					}
				}
			}
			if entries, _ := os.ReadDir(filepath.Join(root, ".services")); len(entries) > 0 {
				t.Errorf("up left state behind although it started nothing: %v", entries)
			}
		})
	}

	// The second way out, taken: the variables the script suggests make
	// `up` start servers of its own, which then let us in.
	t.Run("the suggested variables start servers of our own", func(t *testing.T) {
		root := repoCopy(t)
		stderr, _ := runServices(t, root, []string{"REDIS_ADDR=" + redisAddr, pgAt("walletlock", "walletlock")}, "", "up")
		m := regexp.MustCompile("export (.*); make up").FindStringSubmatch(stderr)
		if m == nil {
			t.Fatalf("no suggestion to export variables:\n%s", stderr)
		}
		var env []string
		for _, kv := range strings.Fields(m[1]) {
			env = append(env, strings.ReplaceAll(kv, "'", ""))
		}
		stderr, code := runServices(t, root, env, "", "up")
		if code != 0 {
			t.Fatalf("up with %q: exit %d\n%s", env, code, stderr)
		}
		checkQuiet(t, stderr)
		for _, want := range []string{"lets us in", "lets walletlock into walletlock"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("up with %q does not say %q:\n%s", env, want, stderr)
			}
		}
		if stderr, code := runServices(t, root, env, "", "up"); code != 0 {
			t.Errorf("up a second time: exit %d, want 0\n%s", code, stderr)
		}
		if stderr, code := runServices(t, root, env, "", "down"); code != 0 || !strings.Contains(stderr, "stopped redis-server") || !strings.Contains(stderr, "stopped PostgreSQL") {
			t.Errorf("down: exit %d\n%s", code, stderr)
		}
		for _, port := range regexp.MustCompile(`localhost:(\d+)`).FindAllStringSubmatch(m[1], -1) {
			if n, _ := strconv.Atoi(port[1]); answers(n) {
				t.Errorf("after down, something still answers on port %d", n)
			}
		}
		if !answers(redisPort) || !answers(pgPort) {
			t.Error("down stopped servers that up did not start")
		}
	})
}

// fakeMachine is a PATH with the few tools the program and the stand-ins
// need, minus redis-server, plus stand-ins for sudo and apt-get that write
// what they were asked to a log. The apt-get stand-in "installs"
// redis-server by linking the real one in. Who we are (root or not) is the
// machine's uid.
type fakeMachine struct {
	bin, log string
}

func newFakeMachine(t *testing.T, realRedis string, sudo string, aptGet bool, serviceStarts bool) fakeMachine {
	t.Helper()
	dir := t.TempDir()
	m := fakeMachine{bin: filepath.Join(dir, "bin"), log: filepath.Join(dir, "log")}
	if err := os.Mkdir(m.bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"bash", "sh", "env", "ln", "printf", "ip"} {
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(m.bin, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		script := "#!" + bash + "\n" + body + "\n"
		if err := os.WriteFile(filepath.Join(m.bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	switch sudo {
	case "ok":
		write("sudo", fmt.Sprintf(`echo "sudo $*" >>%q; case $1 in -n|-v) exit 0;; esac; exec "$@"`, m.log))
	case "password":
		write("sudo", fmt.Sprintf(`echo "sudo $*" >>%q; exit 1`, m.log))
	}
	if aptGet {
		// Debian's postinst may start the service it installed.
		start := ":"
		if serviceStarts {
			start = fmt.Sprintf(`printf 'bind 127.0.0.1\nport %%s\ndaemonize yes\nsave ""\ndir %%s\npidfile %%s\n' "$REDIS_PORT_FOR_TEST" %q %q | %q - >/dev/null`,
				dir, filepath.Join(dir, "packaged.pid"), realRedis)
			t.Cleanup(func() {
				if pid, err := os.ReadFile(filepath.Join(dir, "packaged.pid")); err == nil {
					if n, err := strconv.Atoi(strings.TrimSpace(string(pid))); err == nil {
						syscall.Kill(n, syscall.SIGTERM)
					}
				}
			})
		}
		write("apt-get", fmt.Sprintf(`echo "apt-get $* (DEBIAN_FRONTEND=$DEBIAN_FRONTEND)" >>%q
for a in "$@"; do
  if [ "$a" = redis-server ]; then ln -sf %q %q; %s; fi
done`, m.log, realRedis, filepath.Join(m.bin, "redis-server"), start))
	}
	return m
}

func (m fakeMachine) calls(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(m.log)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(raw) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
}

func TestServices_installsWhatIsMissing(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	// A PostgreSQL that lets us in, so that only redis-server is missing.
	pgPort := startPostgres(t, bins)
	pgOK := fmt.Sprintf("DATABASE_URL=postgres://roleonly:%s@127.0.0.1:%d/postgres?sslmode=disable", pgSecret, pgPort)

	const (
		update    = "apt-get update -qq (DEBIAN_FRONTEND=noninteractive)"
		install   = "apt-get install -y -qq --no-install-recommends redis-server (DEBIAN_FRONTEND=noninteractive)"
		sudoCheck = "sudo -n true"
		sudoUp    = "sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq"
		sudoIn    = "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server"
	)
	tests := []struct {
		name          string
		uid           int
		sudo          string // "", "ok" or "password" (sudo -n fails, no terminal)
		aptGet        bool
		serviceStarts bool
		wantCode      int
		wantCalls     []string
		wantSaid      string
	}{
		{"as root with apt-get", 0, "", true, false, 0,
			[]string{update, install}, "installing redis-server with apt-get: nothing answers at 127.0.0.1:"},
		{"through sudo when not root", 1000, "ok", true, false, 0,
			[]string{sudoCheck, sudoUp, update, sudoIn, install}, "installing redis-server with sudo apt-get: nothing answers at 127.0.0.1:"},
		{"the package starts its own service, and it lets us in", 0, "", true, true, 0,
			[]string{update, install}, "the redis-server package started its own Redis at 127.0.0.1:"},
		{"sudo wants a password and there is no terminal", 1000, "password", true, false, 1,
			[]string{sudoCheck}, "run sudo apt-get update && sudo apt-get install -y redis-server; then make up"},
		{"not root and no sudo", 1000, "", true, false, 1,
			nil, "as root, run: apt-get update && apt-get install -y redis-server"},
		{"no package manager this script knows", 0, "", false, false, 1,
			nil, "install redis-server and PostgreSQL (initdb, pg_ctl) with your package manager, or start Docker"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newFakeMachine(t, bins["redis-server"], tt.sudo, tt.aptGet, tt.serviceStarts)
			root := repoCopy(t)
			port := testPort(t)
			env := []string{fmt.Sprintf("REDIS_ADDR=127.0.0.1:%d", port), pgOK, "REDIS_PORT_FOR_TEST=" + strconv.Itoa(port)}
			stderr, code := runOn(t, &machine{root: root, uid: tt.uid, goos: "linux"}, env, m.bin, "up")
			if code != tt.wantCode {
				t.Errorf("up: exit %d, want %d\n%s", code, tt.wantCode, stderr)
			}
			checkQuiet(t, stderr)
			if !strings.Contains(stderr, tt.wantSaid) {
				t.Errorf("up does not say %q:\n%s", tt.wantSaid, stderr)
			}
			if got := m.calls(t); strings.Join(got, "\n") != strings.Join(tt.wantCalls, "\n") {
				t.Errorf("calls =\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tt.wantCalls, "\n\t"))
			}
			_, err := os.Stat(filepath.Join(root, ".services", fmt.Sprintf("redis-%d", port), "started"))
			if started, want := err == nil, tt.wantCode == 0 && !tt.serviceStarts; started != want {
				t.Errorf("up started a redis-server of its own: %v, want %v", started, want)
			}
			if tt.wantCode == 0 && !answers(port) {
				t.Errorf("up succeeded, but nothing answers on port %d", port)
			}
		})
	}
}

// redlock-up starts the Redlock nodes that do not answer yet, with no
// persistence, and uses one that answers as it is; redlock-down stops
// only those it started.
func TestServices_redlockUpAndDown(t *testing.T) {
	bins := binaries(t, "redis-server")
	root := repoCopy(t)
	foreign := startRedis(t, bins["redis-server"])
	p1, p2 := testPort(t), testPort(t)
	addrs := fmt.Sprintf("127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", p1, p2, foreign)
	env := []string{"REDLOCK_ADDRS=" + addrs}

	stderr, code := runServices(t, root, env, "", "redlock-up")
	checkQuiet(t, stderr)
	if code != 0 || !strings.Contains(stderr, "Redlock nodes: 3 of 3 answer at "+addrs+" (started 2 here, 1 already running)") {
		t.Fatalf("redlock-up = %d, stderr:\n%s", code, stderr)
	}
	for _, p := range []int{p1, p2} {
		rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(p)})
		got, err := rdb.ConfigGet(t.Context(), "*").Result()
		rdb.Close()
		if err != nil || got["save"] != "" || got["appendonly"] != "no" || got["bind"] != "127.0.0.1" {
			t.Errorf("node on port %d: save %q, appendonly %q, bind %q (%v); want no persistence, loopback only",
				p, got["save"], got["appendonly"], got["bind"], err)
		}
	}
	if stderr, code := runServices(t, root, env, "", "redlock-up"); code != 0 || !strings.Contains(stderr, "(started 0 here, 3 already running)") {
		t.Errorf("a second redlock-up = %d, stderr:\n%s", code, stderr)
	}
	if stderr, code := runServices(t, root, env, "", "redlock-status"); code != 0 || !strings.Contains(stderr, "3 of 3 answer") {
		t.Errorf("redlock-status = %d, stderr:\n%s", code, stderr)
	}

	stderr, code = runServices(t, root, env, "", "redlock-down")
	checkQuiet(t, stderr)
	if code != 0 || strings.Count(stderr, "stopped the Redlock node on port") != 2 {
		t.Errorf("redlock-down = %d, stderr:\n%s", code, stderr)
	}
	if answers(p1) || answers(p2) {
		t.Error("a node redlock-up started still answers after redlock-down")
	}
	if !answers(foreign) {
		t.Error("redlock-down stopped a Redis it did not start")
	}
	if stderr, code := runServices(t, root, env, "", "redlock-status"); code != 1 || !strings.Contains(stderr, "1 of 3 answer") || !strings.Contains(stderr, "make redlock-up") {
		t.Errorf("redlock-status with two nodes down = %d, stderr:\n%s", code, stderr)
	}
}

func TestServices_redlockRefusesBadAddresses(t *testing.T) {
	root := repoCopy(t)
	for _, tt := range []struct{ addrs, want string }{
		{"127.0.0.1:1,nope,127.0.0.1:3", `REDLOCK_ADDRS: "nope" is not host:port`},
		{"127.0.0.1:1,127.0.0.1:2", "REDLOCK_ADDRS names 2 nodes, Redlock needs at least 3"},
	} {
		stderr, code := runServices(t, root, []string{"REDLOCK_ADDRS=" + tt.addrs}, "", "redlock-up")
		checkQuiet(t, stderr)
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) {
			t.Errorf("redlock-up with %s = %d, stderr %q; want 1 and one line saying %q", tt.addrs, code, stderr, tt.want)
		}
	}
}

// The Makefile rebuilds the program when a file of one of SERVICES_PKGS
// changes: the list must name every package of this module it imports.
func TestMakefile_listsEveryPackage(t *testing.T) {
	raw, err := os.ReadFile("../../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, list := range []struct{ name, module string }{{"SERVICES_PKGS", "example.com/walletlock/lab/"}, {"ROOT_SERVICES_PKGS", "example.com/walletlock/"}} {
		m := regexp.MustCompile(`(?m)^` + list.name + ` = (.*)$`).FindSubmatch(raw)
		if m == nil {
			t.Fatalf("the Makefile has no %s line", list.name)
		}
		for _, dir := range strings.Fields(string(m[1])) {
			listed[list.module+dir] = true
		}
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "example.com/walletlock/") && !listed[pkg] {
			t.Errorf("cmd/servers imports %s, which SERVICES_PKGS (or ROOT_SERVICES_PKGS, for the root's) in the Makefile does not list", pkg)
		}
	}
}

// clusterPorts returns a first port whose six ports and their bus ports
// are free.
func clusterPorts(t *testing.T) int {
	t.Helper()
	for first := 21001; first < 30000; first += 97 {
		free := true
		for p := first; p < first+6 && free; p++ {
			free = !answers(p) && !answers(p+10000)
		}
		if free {
			return first
		}
	}
	t.Skip("no six free ports with free bus ports")
	return 0
}

func TestServices_clusterChecksPortsFirst(t *testing.T) {
	first := clusterPorts(t)
	for _, tt := range []struct {
		name string
		busy int // a port something else listens on
		want string
	}{
		{"a node's port is taken", first + 2, fmt.Sprintf("port %d (or its bus port %d) is taken by something this program did not start", first+2, first+10002)},
		{"a node's bus port is taken", first + 10004, fmt.Sprintf("port %d (or its bus port %d) is taken by something this program did not start", first+4, first+10004)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(tt.busy))
			if err != nil {
				t.Skip(err)
			}
			defer l.Close()
			root := t.TempDir()
			stderr, code := runServices(t, root, []string{"CLUSTER_PORT=" + strconv.Itoa(first)}, "", "cluster-up")
			checkQuiet(t, stderr)
			if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.want) || !strings.Contains(stderr, "CLUSTER_PORT=8001 make cluster-up") {
				t.Errorf("cluster-up = %d, stderr %q; want 1 and one line saying %q", code, stderr, tt.want)
			}
			if _, err := os.Stat(filepath.Join(root, ".services", fmt.Sprintf("cluster-%d.started", first))); err == nil {
				t.Error("cluster-up started something although a port was taken")
			}
		})
	}
	for _, bad := range []string{"80", "60000", "seven"} {
		stderr, code := runServices(t, t.TempDir(), []string{"CLUSTER_PORT=" + bad}, "", "cluster-up")
		if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "CLUSTER_PORT must be a port from 1024 to 55530") {
			t.Errorf("cluster-up with CLUSTER_PORT=%s = %d, stderr %q", bad, code, stderr)
		}
	}
}

// On Windows, with no Docker and nothing answering, up says in one line
// what to install.
func TestServices_windowsSaysWhatToInstall(t *testing.T) {
	empty := t.TempDir() // a PATH with no docker on it
	env := []string{fmt.Sprintf("REDIS_ADDR=127.0.0.1:%d", testPort(t)),
		fmt.Sprintf("DATABASE_URL=postgres://walletlock:walletlock@127.0.0.1:%d/walletlock", testPort(t))}
	stderr, code := runOn(t, &machine{root: t.TempDir(), goos: "windows"}, env, empty, "up")
	checkQuiet(t, stderr)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "Docker Desktop") || !strings.Contains(stderr, "Memurai") {
		t.Errorf("up on Windows = %d, stderr %q; want 1 and one line naming Docker Desktop and Memurai", code, stderr)
	}
}

// A Redis that up starts with a password gets it on stdin: it is on no
// command line, and the server then lets us in with it.
func TestServices_noPasswordOnTheCommandLine(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	pgPort := startPostgres(t, bins)
	root := repoCopy(t)
	port := testPort(t)
	env := []string{fmt.Sprintf("REDIS_URL=redis://:%s@127.0.0.1:%d", redisSecret, port),
		fmt.Sprintf("DATABASE_URL=postgres://roleonly:%s@127.0.0.1:%d/postgres?sslmode=disable", pgSecret, pgPort)}
	stderr, code := runServices(t, root, env, "", "up")
	checkQuiet(t, stderr)
	if code != 0 || !strings.Contains(stderr, "lets us in") {
		t.Fatalf("up = %d:\n%s", code, stderr)
	}
	pid, err := os.ReadFile(filepath.Join(root, ".services", fmt.Sprintf("redis-%d", port), "redis.pid"))
	if err != nil {
		t.Fatal(err)
	}
	cmdline, err := os.ReadFile("/proc/" + strings.TrimSpace(string(pid)) + "/cmdline")
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if strings.Contains(string(cmdline), redisSecret) {
		t.Errorf("the password is on redis-server's command line: %q", cmdline)
	}
	if stderr, code := runServices(t, root, env, "", "status"); code != 0 || !strings.Contains(stderr, "started here: redis-server") {
		t.Errorf("status = %d:\n%s", code, stderr)
	}
}

// cluster-up starts six nodes and joins them, cluster-up again finds them
// running, and cluster-down stops exactly those.
func TestServices_clusterUpAndDown(t *testing.T) {
	binaries(t, "redis-server")
	first := clusterPorts(t)
	root := t.TempDir()
	env := []string{"CLUSTER_PORT=" + strconv.Itoa(first)}
	t.Cleanup(func() { runServices(t, root, env, "", "cluster-down") })

	stderr, code := runServices(t, root, env, "", "cluster-up")
	checkQuiet(t, stderr)
	if code != 0 || !strings.Contains(stderr, "cluster_state:ok on every node") || !strings.Contains(stderr, fmt.Sprintf("export REDIS_ADDR=127.0.0.1:%d,", first)) {
		t.Fatalf("cluster-up = %d:\n%s", code, stderr)
	}
	if stderr, code := runServices(t, root, env, "", "cluster-up"); code != 0 || !strings.Contains(stderr, "(already running)") {
		t.Errorf("a second cluster-up = %d:\n%s", code, stderr)
	}
	stderr, code = runServices(t, root, env, "", "cluster-status")
	if code != 0 || strings.Count(stderr, "master, cluster_state:ok") != 3 || strings.Count(stderr, "slave, cluster_state:ok") != 3 {
		t.Errorf("cluster-status = %d:\n%s", code, stderr)
	}
	if stderr, code := runServices(t, root, env, "", "cluster-down"); code != 0 || !strings.Contains(stderr, "stopped 6 redis-server processes") {
		t.Errorf("cluster-down = %d:\n%s", code, stderr)
	}
	for p := first; p < first+6; p++ {
		if answers(p) {
			t.Errorf("after cluster-down, something still answers on port %d", p)
		}
	}
	if stderr, code := runServices(t, root, env, "", "cluster-status"); code != 1 || !strings.Contains(stderr, "nothing answers") {
		t.Errorf("cluster-status after down = %d:\n%s", code, stderr)
	}
}
