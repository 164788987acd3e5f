//go:build unix

// What a careful user broke in cmd/servers (issue 35), each against
// servers of the test's own on free loopback ports, in folders of its own:
// a copy of a checkout, an interrupted up, two ups at once, a folder that
// cannot be written, addresses and names chosen to do harm.
package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
)

// pgTmp returns a folder for TMPDIR that the user postgres can enter, so
// that as root a PostgreSQL whose repository folder is closed to that
// user gets its temporary folder there, where the test sees it. When the
// test ends, any process still working in it (one the program left
// behind) is killed, and any walletlock-pg.* folder left is an error.
func pgTmp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "walletlock-svctest-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, pid := range workingIn(dir) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "walletlock-pg.*")); len(left) > 0 {
			t.Errorf("temporary folders left behind: %v", left)
		}
		os.RemoveAll(dir)
	})
	return dir
}

// workingIn returns the processes whose working directory is in dir.
func workingIn(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if cwd, err := os.Readlink("/proc/" + e.Name() + "/cwd"); err == nil && strings.HasPrefix(cwd, dir+"/") {
			pids = append(pids, pid)
		}
	}
	return pids
}

func needProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/cwd"); err != nil {
		t.Skip("no /proc here")
	}
}

// localEnv is the configuration of a Redis and a PostgreSQL that up must
// start on free ports, with TMPDIR the test's own.
func localEnv(t *testing.T) (env []string, redisPort, pgPort int) {
	t.Helper()
	redisPort, pgPort = testPort(t), testPort(t)
	return []string{fmt.Sprintf("REDIS_ADDR=127.0.0.1:%d", redisPort),
		fmt.Sprintf("DATABASE_URL=postgres://walletlock:walletlock@127.0.0.1:%d/walletlock?sslmode=disable", pgPort),
		"TMPDIR=" + pgTmp(t)}, redisPort, pgPort
}

// Item 3: down in a copy of a checkout (cp -a after up) stops neither the
// original's servers nor removes their data; down in the original does.
func TestServices_downInACopyLeavesTheOriginalAlone(t *testing.T) {
	binaries(t, "redis-server", "initdb", "postgres", "psql")
	env, redisPort, pgPort := localEnv(t) // before repoCopy: its down runs first at clean-up
	root := repoCopy(t)
	if stderr, code := runServices(t, root, env, "", "up"); code != 0 {
		t.Fatalf("up = %d:\n%s", code, stderr)
	}
	home := pgHome(t, root)
	copyRoot := filepath.Join(t.TempDir(), "copy")
	if out, err := exec.Command("cp", "-a", root, copyRoot).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v\n%s", err, out)
	}
	stderr, code := runServices(t, copyRoot, env, "", "down")
	checkQuiet(t, stderr)
	if code != 0 || !strings.Contains(stderr, "not this copy of it: left running") {
		t.Errorf("down in the copy = %d, want 0 and to say it leaves the original's servers:\n%s", code, stderr)
	}
	if !answers(redisPort) || !answers(pgPort) {
		t.Fatalf("after down in the copy: the original's Redis answers %v, PostgreSQL %v; want both", answers(redisPort), answers(pgPort))
	}
	if _, err := os.Stat(filepath.Join(home, "data", "PG_VERSION")); err != nil {
		t.Fatalf("down in the copy removed the original's data: %v", err)
	}
	if stderr, code := runServices(t, copyRoot, env, "", "down"); code != 0 {
		t.Errorf("down in the copy, twice = %d:\n%s", code, stderr)
	}
	stderr, code = runServices(t, root, env, "", "down")
	if code != 0 || !strings.Contains(stderr, "stopped redis-server") || !strings.Contains(stderr, "stopped PostgreSQL") {
		t.Errorf("down in the original = %d:\n%s", code, stderr)
	}
	if answers(redisPort) || answers(pgPort) {
		t.Error("something still answers after down in the original")
	}
}

// Item 3: a pid file that names a redis-server on another port (here in
// the layout of the version before records) is not a server of ours, and
// down does not stop it.
func TestServices_downLeavesARedisThePidFileWronglyNames(t *testing.T) {
	bins := binaries(t, "redis-server")
	needProc(t)
	root := repoCopy(t)
	foreign := testPort(t)
	cmd := exec.Command(bins["redis-server"], "--port", strconv.Itoa(foreign), "--bind", "127.0.0.1", "--save", "")
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	waitForPort(t, foreign, "redis-server")
	state := filepath.Join(root, ".services")
	os.MkdirAll(filepath.Join(state, "redis"), 0o755)
	os.WriteFile(filepath.Join(state, "redis.started"), []byte(strconv.Itoa(testPort(t))+"\n"), 0o644)
	os.WriteFile(filepath.Join(state, "redis", "redis.pid"), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644)
	stderr, code := runServices(t, root, nil, "", "down")
	checkQuiet(t, stderr)
	if !answers(foreign) {
		t.Fatalf("down stopped a redis-server on port %d that its pid file named, though it serves another port and folder:\n%s", foreign, stderr)
	}
	if code != 0 || !strings.Contains(stderr, "was not running") {
		t.Errorf("down = %d, want 0 and to say the recorded server was not running:\n%s", code, stderr)
	}
}

// Item 4: an up interrupted while initdb runs, or while PostgreSQL
// starts, leaves no server, no record and no temporary folder, and the
// next up starts one that lets us in.
func TestServices_interruptedUpLeavesNothing(t *testing.T) {
	binaries(t, "redis-server", "initdb", "postgres", "psql")
	needProc(t)
	tests := []struct {
		name   string
		marker string // the glob, in TMPDIR or the repository, whose match means "interrupt now"
	}{
		{"while initdb runs", "walletlock-pg.*/data*"},
		// Its log is made as it starts (initdb, which also writes a
		// postmaster.pid, is over by then).
		{"while PostgreSQL starts", "walletlock-pg.*/postgres.log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, _, pgPort := localEnv(t)
			root := repoCopy(t)
			tmp := strings.TrimPrefix(env[2], "TMPDIR=")
			// PostgreSQL's folder is in TMPDIR as root, in .services/pg
			// otherwise.
			markers := []string{filepath.Join(tmp, tt.marker),
				filepath.Join(root, ".services", "pg", strings.TrimPrefix(tt.marker, "walletlock-pg.*/"))}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				for ctx.Err() == nil {
					for _, m := range markers {
						if found, _ := filepath.Glob(m); len(found) > 0 {
							cancel()
							return
						}
					}
					time.Sleep(time.Millisecond)
				}
			}()
			r := runEach(t, ctx, env, "", []*machine{{root: root, uid: os.Getuid(), goos: "linux"}}, "up")
			if ctx.Err() == nil {
				t.Fatalf("up ended before the interrupt: %d\n%s", r[0].code, r[0].stderr)
			}
			if r[0].code == 0 {
				t.Errorf("interrupted up = 0, want 1:\n%s", r[0].stderr)
			}
			if left := workingIn(tmp); len(left) > 0 {
				t.Errorf("an interrupted up left processes %v working in its temporary folder:\n%s", left, r[0].stderr)
			}
			if left := workingIn(filepath.Join(root, ".services")); len(left) > 0 {
				t.Errorf("an interrupted up left processes %v working in .services:\n%s", left, r[0].stderr)
			}
			if left, _ := filepath.Glob(filepath.Join(tmp, "walletlock-pg.*")); len(left) > 0 {
				t.Errorf("an interrupted up left %v", left)
			}
			if _, err := os.Stat(filepath.Join(root, ".services", "pg.started")); err == nil {
				t.Error("an interrupted up left pg.started")
			}
			stderr, code := runServices(t, root, env, "", "up")
			if code != 0 || !strings.Contains(stderr, "lets walletlock into walletlock") {
				t.Errorf("up after the interrupted one = %d, want 0 and PostgreSQL at port %d letting us in:\n%s", code, pgPort, stderr)
			}
		})
	}
}

// Item 5: up on one Redis port, then up on another: down stops both.
func TestServices_downStopsTheRedisOfEveryUp(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	pgPort := startPostgres(t, bins)
	pgOK := fmt.Sprintf("DATABASE_URL=postgres://roleonly:%s@127.0.0.1:%d/postgres?sslmode=disable", pgSecret, pgPort)
	root := repoCopy(t)
	first, second := testPort(t), testPort(t)
	for _, port := range []int{first, second} {
		if stderr, code := runServices(t, root, []string{fmt.Sprintf("REDIS_ADDR=127.0.0.1:%d", port), pgOK}, "", "up"); code != 0 {
			t.Fatalf("up on port %d = %d:\n%s", port, code, stderr)
		}
	}
	stderr, code := runServices(t, root, nil, "", "down")
	if code != 0 {
		t.Errorf("down = %d:\n%s", code, stderr)
	}
	for _, port := range []int{first, second} {
		if answers(port) {
			t.Errorf("after down, the Redis that up started on port %d still answers:\n%s", port, stderr)
		}
	}
}

// freeze makes dir unwritable, even to root (chattr +i), until the test
// ends.
func freeze(t *testing.T, dir string) {
	t.Helper()
	if os.Getuid() != 0 {
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
		return
	}
	if out, err := exec.Command("chattr", "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("chattr +i: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", dir).Run() })
}

// Item 5: with .services unwritable, up either fails and leaves nothing
// running, or succeeds and down stops what it started: never a server
// that no record names.
func TestServices_unwritableStateLeavesNothingRunning(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	pgPort := startPostgres(t, bins)
	root := repoCopy(t)
	port := testPort(t)
	env := []string{fmt.Sprintf("REDIS_ADDR=127.0.0.1:%d", port),
		fmt.Sprintf("DATABASE_URL=postgres://roleonly:%s@127.0.0.1:%d/postgres?sslmode=disable", pgSecret, pgPort)}
	state := filepath.Join(root, ".services")
	// What an earlier up of the version before left: its Redis folder.
	if err := os.MkdirAll(filepath.Join(state, "redis"), 0o755); err != nil {
		t.Fatal(err)
	}
	freeze(t, state)
	stderr, code := runServices(t, root, env, "", "up")
	checkQuiet(t, stderr)
	if code != 0 {
		if answers(port) {
			t.Errorf("up failed (%d), and left a Redis running on port %d:\n%s", code, port, stderr)
		}
		if !strings.Contains(stderr, ".services") {
			t.Errorf("up failed without naming .services:\n%s", stderr)
		}
		return
	}
	downErr, downCode := runServices(t, root, env, "", "down")
	if answers(port) {
		t.Errorf("up = 0, and down (%d) left its Redis running on port %d:\n%s\n%s", downCode, port, stderr, downErr)
	}
}

// Item 5: an up that fails after making PostgreSQL's temporary folder
// removes it again.
func TestServices_failedUpLeavesNoTemporaryFolder(t *testing.T) {
	binaries(t, "redis-server", "psql")
	if os.Getuid() != 0 {
		t.Skip("only root puts PostgreSQL in a temporary folder")
	}
	// An initdb that fails, beside a pg_ctl, both first on PATH.
	bin := t.TempDir()
	for _, name := range []string{"initdb", "pg_ctl", "postgres"} {
		os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho 'initdb: failed on purpose' >&2\nexit 1\n"), 0o755)
	}
	env, _, _ := localEnv(t)
	root := repoCopy(t)
	tmp := strings.TrimPrefix(env[2], "TMPDIR=")
	for range 2 {
		stderr, code := runServices(t, root, env, bin+":"+os.Getenv("PATH"), "up")
		if code == 0 {
			t.Fatalf("up with a failing initdb = 0:\n%s", stderr)
		}
		if left, _ := filepath.Glob(filepath.Join(tmp, "walletlock-pg.*")); len(left) > 0 {
			t.Errorf("a failed up left %v:\n%s", left, stderr)
			for _, d := range left {
				os.RemoveAll(d)
			}
		}
	}
}

// Item 6: up starts Redis where REDIS_ADDR says, ::1 included, and
// refuses rediss://, which the Redis it starts does not speak, rather
// than start one that a fix printed next would have to stop and start
// again.
func TestServices_upStartsRedisWhereAsked(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	pgPort := startPostgres(t, bins)
	pgOK := fmt.Sprintf("DATABASE_URL=postgres://roleonly:%s@127.0.0.1:%d/postgres?sslmode=disable", pgSecret, pgPort)
	t.Run("on ::1", func(t *testing.T) {
		l, err := net.Listen("tcp", "[::1]:0")
		if err != nil {
			t.Skipf("no ::1 here: %v", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		addr := net.JoinHostPort("::1", strconv.Itoa(port))
		root := repoCopy(t)
		stderr, code := runServices(t, root, []string{"REDIS_ADDR=" + addr, pgOK}, "", "up")
		if code != 0 || !launch.Answers(addr) {
			t.Errorf("up with REDIS_ADDR=%s = %d, and Redis answers there: %v\n%s", addr, code, launch.Answers(addr), stderr)
		}
	})
	t.Run("over TLS", func(t *testing.T) {
		root := repoCopy(t)
		port := testPort(t)
		stderr, code := runServices(t, root, []string{fmt.Sprintf("REDIS_URL=rediss://127.0.0.1:%d/0", port), pgOK}, "", "up")
		checkQuiet(t, stderr)
		if code != 1 || !strings.Contains(stderr, "rediss://") || strings.Contains(stderr, "make down; make up") {
			t.Errorf("up with rediss:// and nothing there = %d, want 1, a word on TLS and no make down; make up:\n%s", code, stderr)
		}
		if answers(port) {
			t.Errorf("up started something on port %d for rediss://", port)
		}
	})
}

// Item 7: a Redis that up starts for a user in REDIS_URL lets that user
// in, and nobody else: the default user is off.
func TestServices_startedRedisLetsOnlyTheConfiguredUserIn(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	pgPort := startPostgres(t, bins)
	root := repoCopy(t)
	port := testPort(t)
	env := []string{fmt.Sprintf("REDIS_URL=redis://alice:%s@127.0.0.1:%d/0", redisSecret, port),
		fmt.Sprintf("DATABASE_URL=postgres://roleonly:%s@127.0.0.1:%d/postgres?sslmode=disable", pgSecret, pgPort)}
	if stderr, code := runServices(t, root, env, "", "up"); code != 0 {
		t.Fatalf("up = %d:\n%s", code, stderr)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	for _, tt := range []struct {
		name, user, pass string
		in               bool
	}{
		{"no credentials", "", "", false},
		{"the default user", "default", "", false},
		{"the configured user", "alice", redisSecret, true},
	} {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Username: tt.user, Password: tt.pass, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
		err := rdb.Ping(t.Context()).Err()
		rdb.Close()
		if (err == nil) != tt.in {
			t.Errorf("%s: PING = %v, let in %v; want let in %v", tt.name, err, err == nil, tt.in)
		}
	}
}

// Item 8: the psql fix printed for a user and a database whose names a
// shell would run pastes as it reads: run by sh, it creates them, runs
// nothing else, and the next up lets that user in.
func TestServices_printedFixRunsAsItReads(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	redisPort := startRedis(t, bins["redis-server"])
	pgPort := startPostgres(t, bins)
	root := repoCopy(t)
	user, db := "ev$(touch pwned)il", "d`touch pwned2`b"
	env := []string{fmt.Sprintf("REDIS_URL=redis://:%s@127.0.0.1:%d", redisSecret, redisPort),
		fmt.Sprintf("DATABASE_URL=postgres://%s:walletlock@127.0.0.1:%d/%s?sslmode=disable",
			strings.ReplaceAll(user, " ", "%20"), pgPort, strings.ReplaceAll(db, " ", "%20"))}
	stderr, code := runServices(t, root, env, "", "up")
	checkQuiet(t, stderr)
	m := regexp.MustCompile(`fix: create the role and the database there: (psql .*)`).FindStringSubmatch(stderr)
	if code != 1 || m == nil {
		t.Fatalf("up = %d, want 1 and a psql fix:\n%s", code, stderr)
	}
	here := t.TempDir()
	sh := exec.Command("sh", "-c", m[1])
	sh.Dir = here
	sh.Env = append(os.Environ(), "PGPASSWORD="+pgSecret, "PGCONNECT_TIMEOUT=10")
	if out, err := sh.CombinedOutput(); err != nil {
		t.Errorf("the printed fix failed: %v\n%s\n%s", err, m[1], out)
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(here, f)); err == nil {
			t.Errorf("pasting the printed fix ran a command that a name smuggled in (%s exists):\n%s", f, m[1])
		}
	}
	stderr, code = runServices(t, root, env, "", "up")
	if code != 0 || !strings.Contains(stderr, "lets "+user+" into "+db) {
		t.Errorf("up after the fix = %d, want 0 and %q let in:\n%s", code, user, stderr)
	}
}

// serveFake listens on a free loopback port until the test ends, and
// hands each connection to handle, which closes it. It returns the port.
func serveFake(t *testing.T, handle func(c net.Conn)) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// fakeRedis answers every command with reply, as a server that means harm
// to the terminal might.
func fakeRedis(t *testing.T, reply string) int {
	return serveFake(t, func(c net.Conn) {
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
			c.Write([]byte(reply))
		}
	})
}

// fakePostgres refuses every login with an error whose text is message.
func fakePostgres(t *testing.T, message string) int {
	return serveFake(t, func(c net.Conn) {
		be := pgproto3.NewBackend(c, c)
		for {
			msg, err := be.ReceiveStartupMessage()
			if err != nil {
				return
			}
			switch msg.(type) {
			case *pgproto3.SSLRequest, *pgproto3.GSSEncRequest:
				c.Write([]byte("N"))
				continue
			}
			be.Send(&pgproto3.ErrorResponse{Severity: "FATAL", SeverityUnlocalized: "FATAL", Code: "28000", Message: message})
			be.Flush()
			return
		}
	})
}

// checkPrintable requires that no control character but the line ends
// reaches the terminal, and that want, the escaped form, does.
func checkPrintable(t *testing.T, what, stderr string, want ...string) {
	t.Helper()
	for _, r := range stderr {
		if r != '\n' && (unicode.IsControl(r) || !unicode.IsPrint(r) && !unicode.IsSpace(r)) {
			t.Errorf("%s prints %q raw:\n%q", what, r, stderr)
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(stderr, w) {
			t.Errorf("%s does not show %q:\n%q", what, w, stderr)
		}
	}
}

// Item 9: what a server answers and what a file of .services holds reach
// the terminal through the one printable filter.
func TestServices_controlCharactersAreShownEscaped(t *testing.T) {
	redisPort := fakeRedis(t, "-NOAUTH \x1b[31mred\x1b]0;pwned\a\r\n")
	pgPort := fakePostgres(t, "no \x1b]0;pwned\a entry for you\r\nhere")
	env := []string{fmt.Sprintf("REDIS_ADDR=127.0.0.1:%d", redisPort),
		fmt.Sprintf("DATABASE_URL=postgres://walletlock:walletlock@127.0.0.1:%d/walletlock?sslmode=disable", pgPort)}
	for _, cmd := range []string{"status", "up"} {
		stderr, code := runServices(t, repoCopy(t), env, "", cmd)
		if code != 1 {
			t.Errorf("%s = %d, want 1", cmd, code)
		}
		checkPrintable(t, cmd, stderr, `NOAUTH \x1b[31mred\x1b]0;pwned\a`, `no \x1b]0;pwned\a entry for you here`)
	}
	t.Run("a path in .services/pg.dir", func(t *testing.T) {
		root := repoCopy(t)
		state := filepath.Join(root, ".services")
		os.MkdirAll(state, 0o755)
		os.WriteFile(filepath.Join(state, "pg.started"), []byte(strconv.Itoa(testPort(t))+"\n"), 0o644)
		os.WriteFile(filepath.Join(state, "pg.dir"), []byte("/tmp/x\x1b]0;pwned\a\n"), 0o644)
		stderr, _ := runServices(t, root, env, "", "status")
		checkPrintable(t, "status", stderr, `/tmp/x\x1b]0;pwned\a`)
		os.Remove(filepath.Join(state, "pg.started")) // not a server to stop at clean-up
	})
}

// Item 16: two ups at once in one checkout that both find PostgreSQL
// missing: one starts it, the other waits and uses it, and both say so.
func TestServices_concurrentUpsStartOnePostgres(t *testing.T) {
	bins := binaries(t, "redis-server", "initdb", "postgres", "psql")
	redisPort := startRedis(t, bins["redis-server"])
	env, _, _ := localEnv(t)
	root := repoCopy(t)
	env[0] = fmt.Sprintf("REDIS_URL=redis://:%s@127.0.0.1:%d", redisSecret, redisPort)
	m := func() *machine { return &machine{root: root, uid: os.Getuid(), goos: "linux"} }
	for i, r := range runEach(t, t.Context(), env, "", []*machine{m(), m()}, "up") {
		checkQuiet(t, r.stderr)
		if r.code != 0 || !strings.Contains(r.stderr, "lets walletlock into walletlock") {
			t.Errorf("up %d of two at once = %d, want 0 and PostgreSQL letting us in:\n%s", i+1, r.code, r.stderr)
		}
	}
}

// Item 16: REDIS_ADDR with port 0, which no server listens on, is
// refused at once, in one line that says which ports are.
func TestServices_portZeroIsRefused(t *testing.T) {
	root := repoCopy(t)
	stderr, code := runServices(t, root, []string{"REDIS_ADDR=127.0.0.1:0"}, "", "up")
	checkQuiet(t, stderr)
	if code != 1 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "from 1 to 65535") {
		t.Errorf("up with REDIS_ADDR=127.0.0.1:0 = %d, want 1 and one line naming the ports from 1 to 65535:\n%s", code, stderr)
	}
}

// Item 16: an HTTP server where a Redlock node should be is not a node.
func TestServices_redlockStatusKnowsRedisFromHTTP(t *testing.T) {
	bins := binaries(t, "redis-server")
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	webAddr := strings.TrimPrefix(web.URL, "http://")
	var addrs []string
	for range 2 {
		port := startRedis(t, bins["redis-server"])
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	env := []string{"REDLOCK_ADDRS=" + strings.Join(append(addrs, webAddr), ",")}
	stderr, code := runServices(t, repoCopy(t), env, "", "redlock-status")
	checkQuiet(t, stderr)
	if code != 1 || !strings.Contains(stderr, "2 of 3 answer") || !strings.Contains(stderr, "not Redis at "+webAddr) {
		t.Errorf("redlock-status with an HTTP server among the nodes = %d, want 1, 2 of 3 and the HTTP server named:\n%s", code, stderr)
	}
}

// Item 16: cluster-status tells a port that another server holds from a
// free one.
func TestServices_clusterStatusNamesWhatHoldsAPort(t *testing.T) {
	first := clusterPorts(t)
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(first+1))
	if err != nil {
		t.Skip(err)
	}
	web := &http.Server{Handler: http.NotFoundHandler()}
	go web.Serve(l)
	t.Cleanup(func() { web.Close() })
	stderr, code := runServices(t, repoCopy(t), []string{"CLUSTER_PORT=" + strconv.Itoa(first)}, "", "cluster-status")
	checkQuiet(t, stderr)
	line := regexp.MustCompile(fmt.Sprintf(`(?m)^cluster: 127\.0\.0\.1:%d: (.*)$`, first+1)).FindStringSubmatch(stderr)
	if code != 1 || line == nil || !strings.Contains(line[1], "not Redis") {
		t.Errorf("cluster-status with an HTTP server on port %d = %d, want 1 and that port held by something that is not Redis:\n%s", first+1, code, stderr)
	}
}
