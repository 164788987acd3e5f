//go:build unix

package launch

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// A daemon is a server that outlives the program that started it: `make
// up` starts Redis and PostgreSQL and exits, and `make down`, another run,
// stops them by their pid files. Unlike the processes of a Group, a daemon
// is in no Group: it detaches itself (redis-server's daemonize, pg_ctl's
// start), so neither the parent's death nor a Ctrl-C at the terminal
// reaches it.

// StartRedisDaemon starts redis-server in the background on bind:port,
// with its pid file (redis.pid), log (redis.log) and working files in dir
// and no persistence; lines are more lines of its configuration (a
// requirepass, a user, cluster-enabled). The configuration goes in on
// stdin, so a password in it is on no command line. It returns once the
// server answers, at most 10 s later.
func StartRedisDaemon(ctx context.Context, dir, bind string, port int, lines ...string) error {
	bin, err := RedisBinary()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("launch: %w", err)
	}
	log := filepath.Join(dir, "redis.log")
	conf := append([]string{
		"bind " + bind,
		"port " + strconv.Itoa(port),
		"daemonize yes",
		"dir " + ConfQuote(dir),
		"pidfile " + ConfQuote(filepath.Join(dir, "redis.pid")),
		"logfile " + ConfQuote(log),
		`save ""`,
		"appendonly no",
	}, lines...)
	cmd := exec.CommandContext(ctx, bin, "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join(conf, "\n") + "\n")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("redis-server did not start on port %d (%v); see %s", port, err, log)
	}
	addr := net.JoinHostPort(bind, strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); !Answers(addr); {
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("redis-server on port %d did not answer within 10 s; see %s", port, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// ConfQuote quotes s for a line of redis.conf.
func ConfQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(s) + `"`
}

// DaemonPid returns the pid in pidFile when a process of that pid runs and
// its name starts with name: a pid file outlives its process, and the pid
// may be reused by another.
func DaemonPid(pidFile, name string) (int, bool) {
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 || syscall.Kill(pid, 0) != nil {
		return 0, false
	}
	comm, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil { // no /proc (macOS)
		comm, err = exec.Command("ps", "-p", strconv.Itoa(pid), "-o", "comm=").Output()
	}
	if err != nil || !strings.HasPrefix(filepath.Base(strings.TrimSpace(string(comm))), name) {
		return 0, false
	}
	return pid, true
}

// StopDaemon ends the process named name whose pid is in pidFile
// (SIGTERM), and waits, at most 5 s, until it is gone, so that a start
// right after finds its port free. It reports whether there was such a
// process.
func StopDaemon(pidFile, name string) bool {
	pid, ok := DaemonPid(pidFile, name)
	if !ok {
		return false
	}
	syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			break
		}
	}
	return true
}

// PostgresCluster is a PostgreSQL data folder of ours, Dir/data, whose
// server pg_ctl runs in the background, with its socket and logs in Dir.
// initdb, pg_ctl and postgres refuse to run as root: as root they run as
// the user postgres, from Dir, which that user owns (never from the
// caller's working directory, which it may not be able to enter).
type PostgresCluster struct {
	Dir  string
	bin  string // the folder of initdb, pg_ctl, postgres and psql
	cred *syscall.Credential
}

// OpenPostgresCluster finds PostgreSQL's programs and, as root, gives dir
// to the user postgres.
func OpenPostgresCluster(dir string) (*PostgresCluster, error) {
	bin, err := PostgresBinDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	cred, err := postgresUser(dir)
	if err != nil {
		return nil, err
	}
	return &PostgresCluster{Dir: dir, bin: bin, cred: cred}, nil
}

// PostgresCanEnter reports whether PostgreSQL's user can reach dir: always
// when we are not root; as root, when every folder above it lets the user
// postgres through.
func PostgresCanEnter(dir string) bool {
	if os.Geteuid() != 0 {
		return true
	}
	cred, err := lookupPostgres()
	if err != nil {
		return false
	}
	for d := filepath.Dir(dir); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if syscall.Stat(d, &st) != nil {
			return false
		}
		mode := uint32(st.Mode)
		if !(mode&0o001 != 0 || st.Uid == cred.Uid && mode&0o100 != 0 || st.Gid == cred.Gid && mode&0o010 != 0) {
			return false
		}
		if d == filepath.Dir(d) {
			return true
		}
	}
}

func (c *PostgresCluster) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// Init creates the data folder unless it exists: the superuser postgres,
// trusted on the socket (in Dir, which only its owner can enter), a
// password over TCP. The C locale exists everywhere, even where no locale
// is installed.
func (c *PostgresCluster) Init(ctx context.Context) error {
	data := filepath.Join(c.Dir, "data")
	if _, err := os.Stat(filepath.Join(data, "PG_VERSION")); err == nil {
		return nil
	}
	log := filepath.Join(c.Dir, "initdb.log")
	cmd := c.command(ctx, "initdb", "-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256",
		"--encoding=UTF8", "--no-locale", "--no-instructions")
	out, err := cmd.CombinedOutput()
	os.WriteFile(log, out, 0o644)
	if err != nil {
		return fmt.Errorf("initdb failed; see %s", log)
	}
	return nil
}

// Start starts the server on 127.0.0.1:port and waits, at most 30 s, until
// it accepts connections. fsync is off: this is a throwaway teaching
// database, and tests should not wait for the disk. Never do this with
// data you want to keep.
func (c *PostgresCluster) Start(ctx context.Context, port int) error {
	log := filepath.Join(c.Dir, "postgres.log")
	// pg_ctl hands -o to a shell: the folder goes in single quotes.
	opts := fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k '%s' -c fsync=off -c synchronous_commit=off "+
		"-c full_page_writes=off -c max_connections=200", port, strings.ReplaceAll(c.Dir, `'`, `'\''`))
	cmd := c.command(ctx, "pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-l", log, "-w", "-t", "30", "-o", opts, "start")
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("PostgreSQL did not start; see %s", log)
	}
	return nil
}

// Stop shuts the server down (fast: it ends every connection) and waits
// until it is gone.
func (c *PostgresCluster) Stop(ctx context.Context) error {
	return c.command(ctx, "pg_ctl", "-D", filepath.Join(c.Dir, "data"), "-m", "fast", "-w", "stop").Run()
}

// Psql runs psql as the superuser on the socket, port port, with the
// statements on stdin (a password in them is on no command line).
func (c *PostgresCluster) Psql(ctx context.Context, port int, stdin string) error {
	return RunPsql(ctx, c.command(ctx, "psql", "-h", c.Dir, "-p", strconv.Itoa(port), "-U", "postgres"), stdin)
}

// PackagedPsql runs psql as the user postgres on the default socket of a
// server the postgresql package started (port port): with our own
// credentials as root, through sudo -u postgres otherwise, from /.
func PackagedPsql(ctx context.Context, port int, stdin string) error {
	bin, err := PostgresBinDir()
	if err != nil {
		return err
	}
	psql := filepath.Join(bin, "psql")
	var cmd *exec.Cmd
	if os.Geteuid() == 0 {
		cred, err := lookupPostgres()
		if err != nil {
			return err
		}
		cmd = exec.CommandContext(ctx, psql, "-p", strconv.Itoa(port))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	} else {
		cmd = exec.CommandContext(ctx, "sudo", "-u", "postgres", psql, "-p", strconv.Itoa(port))
	}
	cmd.Dir = "/"
	return RunPsql(ctx, cmd, stdin)
}

// RunPsql adds the options of a script to cmd (a psql command line): the
// database postgres, quiet, stop at the first error; and runs it with
// stdin as the script.
func RunPsql(ctx context.Context, cmd *exec.Cmd, stdin string) error {
	cmd.Args = append(cmd.Args, "-d", "postgres", "-qtAX", "-v", "ON_ERROR_STOP=1")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("psql: %v: %s", err, strings.Join(strings.Fields(string(out)), " "))
	}
	return nil
}

// PostgresVersion is the version `postgres --version` names, such as
// "15.10", or "".
func (c *PostgresCluster) PostgresVersion() string {
	out, _ := exec.Command(filepath.Join(c.bin, "postgres"), "--version").Output()
	f := strings.Fields(string(out))
	if len(f) < 3 {
		return ""
	}
	return f[2]
}
