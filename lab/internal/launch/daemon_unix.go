//go:build unix

package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"example.com/walletlock/internal/safe"
)

// A daemon is a server that outlives the program that started it: `make
// up` starts Redis and PostgreSQL and exits, and `make down` stops them.
// It runs in a session of its own, so neither the parent's death nor a
// Ctrl-C at the terminal reaches it. It is started here, not by
// redis-server's daemonize or pg_ctl, so that its pid is known the moment
// it exists: a start that is interrupted stops what it started.
//
// A pid file is not enough to find it again: a copy of the checkout (cp
// -a) carries the original's pid files, and a pid outlives its process. A
// Daemon names a process by its pid, its start time, the folder it serves
// and the port it listens on, and nothing here signals a process unless
// all four are the Daemon's.

// Daemon is what identifies a server of ours that outlives us. Keep it
// (cmd/servers writes it in .services/) and give it to Check and Stop.
type Daemon struct {
	Kind string `json:"kind"` // "redis-server" or "postgres": what the process is named
	Port int    `json:"port"` // the TCP port it listens on
	// Dir is the folder it serves, which is its working directory:
	// Redis's dir, PostgreSQL's data folder.
	Dir string `json:"dir"`
	Pid int    `json:"pid,omitempty"`
	// Started is when the process started, as the system tells it; empty
	// when it was not recorded (a record written before the server
	// started, or by an older version), and the pid file in Dir then
	// names the process.
	Started string `json:"started,omitempty"`
}

// StartRedisDaemon starts redis-server in the background on bind:port,
// with its pid file, log (redis.log) and working files in dir and no
// persistence; lines are more lines of its configuration, which goes in
// on stdin, so that a password in it is on no command line. It returns
// once the server answers, at most 10 s later; when it does not, or ctx
// ends first, it stops the server again.
func StartRedisDaemon(ctx context.Context, dir, bind string, port int, lines ...string) (*Daemon, error) {
	bin, err := RedisBinary()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	log := filepath.Join(dir, "redis.log")
	conf := append([]string{
		"bind " + bind,
		"port " + strconv.Itoa(port),
		"daemonize no", // we detach it ourselves: see startDaemon
		"dir " + ConfQuote(dir),
		"pidfile " + ConfQuote(filepath.Join(dir, "redis.pid")),
		"logfile " + ConfQuote(log),
		`save ""`,
		"appendonly no",
	}, lines...)
	// What it says before it opens its log (a line of the configuration
	// it refuses) goes to the log too.
	logFile, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "-")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(strings.Join(conf, "\n") + "\n")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	d := &Daemon{Kind: "redis-server", Port: port, Dir: dir}
	addr := net.JoinHostPort(bind, strconv.Itoa(port))
	err = d.start(ctx, cmd, 10*time.Second, func() bool { return Answers(addr) })
	if err != nil {
		said, _ := os.ReadFile(log)
		return nil, fmt.Errorf("redis-server did not start on port %d (%w): %s; see %s", port, err, safe.Line(lastLine(string(said))), log)
	}
	return d, nil
}

// start starts cmd as the daemon d, in a session of its own, and waits
// until ready says it is, or it exits, or wait or ctx runs out; in the
// last two cases it stops it again. Once it is ready, d names it.
func (d *Daemon) start(ctx context.Context, cmd *exec.Cmd, wait time.Duration, ready func() bool) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setsid = true
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reaped, if it ends while we run
	d.Pid = cmd.Process.Pid
	if p, err := readProc(d.Pid); err == nil {
		d.Started = p.started
	}
	err := waitReady(ctx, exited, wait, ready)
	if err != nil && !errors.Is(err, errExited) {
		syscall.Kill(d.Pid, d.stopSignal())
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			syscall.Kill(d.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	return err
}

// stopSignal is the signal that ends the server at once and cleanly:
// SIGINT is PostgreSQL's fast shutdown (SIGTERM would wait for every
// client to leave); Redis ends on SIGTERM.
func (d *Daemon) stopSignal() syscall.Signal {
	if d.Kind == "postgres" {
		return syscall.SIGINT
	}
	return syscall.SIGTERM
}

// pidFile is where the server writes its pid.
func (d *Daemon) pidFile() string {
	if d.Kind == "postgres" {
		return filepath.Join(d.Dir, "postmaster.pid")
	}
	return filepath.Join(d.Dir, "redis.pid")
}

// Check returns nil when d's process runs: a process named d.Kind, with
// d's pid (or, when d records none, the pid in its pid file) and start
// time, whose working directory is d.Dir and which listens on d.Port.
// Otherwise it says, wrapping ErrNotOurs, why no process of ours is
// there: nothing runs, or what runs is another process.
func (d *Daemon) Check() error {
	pid, started := d.Pid, d.Started
	if pid <= 0 {
		raw, err := os.ReadFile(d.pidFile())
		if err != nil {
			return fmt.Errorf("%w: no pid file (%s)", ErrNotOurs, safe.Line(err.Error()))
		}
		first, _, _ := strings.Cut(string(raw), "\n")
		if pid, err = strconv.Atoi(strings.TrimSpace(first)); err != nil || pid <= 0 {
			return fmt.Errorf("%w: %s holds no pid", ErrNotOurs, d.pidFile())
		}
		started = ""
	}
	p, err := readProc(pid)
	if err != nil {
		return fmt.Errorf("%w: nothing runs as pid %d", ErrNotOurs, pid)
	}
	if !strings.HasPrefix(p.name, d.Kind) {
		return fmt.Errorf("%w: pid %d is %s, not %s", ErrNotOurs, pid, safe.Line(p.name), d.Kind)
	}
	if started != "" && p.started != started {
		return fmt.Errorf("%w: pid %d is another %s, started at another time", ErrNotOurs, pid, d.Kind)
	}
	if !inDir(pid, d.Dir) {
		return fmt.Errorf("%w: pid %d serves %s, not %s", ErrNotOurs, pid, safe.Line(p.dir), d.Dir)
	}
	if !listens(pid, d.Port) {
		return fmt.Errorf("%w: pid %d does not listen on port %d", ErrNotOurs, pid, d.Port)
	}
	d.Pid, d.Started = pid, p.started
	return nil
}

// sameDir reports whether a and b are one folder.
func sameDir(a, b string) bool {
	ai, err1 := os.Stat(a)
	bi, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ai, bi)
}

// Stop ends d's process, once Check says it is d's, and waits until it is
// gone, so that a start right after finds its port free; after 10 s it
// kills it. It returns Check's error, and signals nothing, when there is
// no such process.
func (d *Daemon) Stop() error {
	if err := d.Check(); err != nil {
		return err
	}
	if err := syscall.Kill(d.Pid, d.stopSignal()); err != nil {
		return fmt.Errorf("launch: stop %s (pid %d): %w", d.Kind, d.Pid, err)
	}
	gone := func() bool { p, err := readProc(d.Pid); return err != nil || p.started != d.Started }
	killed := false
	for deadline := time.Now().Add(10 * time.Second); !gone(); time.Sleep(20 * time.Millisecond) {
		if time.Now().Before(deadline) {
			continue
		}
		if killed {
			return fmt.Errorf("launch: %s (pid %d) did not end, even killed", d.Kind, d.Pid)
		}
		syscall.Kill(d.Pid, syscall.SIGKILL)
		killed, deadline = true, time.Now().Add(5*time.Second)
	}
	return nil
}

// ConfQuote quotes s for a line of redis.conf.
func ConfQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`).Replace(s) + `"`
}

// PostgresCluster is a PostgreSQL data folder of ours, Dir/data, whose
// server runs in the background, with its socket and logs in Dir. As
// root, initdb and postgres run as the user postgres, from Dir, which
// that user owns.
type PostgresCluster struct {
	Dir  string
	bin  string // the folder of initdb, postgres and psql
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

// Data is the cluster's data folder, the one its server serves.
func (c *PostgresCluster) Data() string { return filepath.Join(c.Dir, "data") }

// Init creates the data folder unless it exists: the superuser postgres,
// trusted on the socket (in Dir, which only its owner can enter), and a
// password over TCP.
func (c *PostgresCluster) Init(ctx context.Context) error {
	return c.initdb(ctx, "postgres", "--auth-local=trust", "--auth-host=scram-sha-256")
}

// initdb creates the data folder unless it exists, with the superuser
// user, the authentication methods auth and the C locale, which exists
// everywhere. initdb works in a folder of its own, renamed to data once it
// succeeded, so that an interrupted one leaves no half folder.
func (c *PostgresCluster) initdb(ctx context.Context, user string, auth ...string) error {
	if _, err := os.Stat(filepath.Join(c.Data(), "PG_VERSION")); err == nil {
		return nil
	}
	work := filepath.Join(c.Dir, fmt.Sprintf("data.initdb-%d", os.Getpid()))
	log := filepath.Join(c.Dir, "initdb.log")
	cmd := c.command(ctx, "initdb", append([]string{"-D", work, "-U", user, "--no-sync", "--encoding=UTF8", "--no-locale", "--no-instructions"}, auth...)...)
	out, err := cmd.CombinedOutput()
	os.WriteFile(log, out, 0o644)
	if err == nil {
		os.RemoveAll(c.Data()) // a half folder of an older version
		err = os.Rename(work, c.Data())
	}
	if err != nil {
		os.RemoveAll(work)
		if ctx.Err() != nil {
			return fmt.Errorf("initdb: %w", ctx.Err())
		}
		return fmt.Errorf("initdb failed (%s); see %s", safe.Line(lastLine(string(out))), log)
	}
	return nil
}

// server is the command line of the server on bind:port, its socket in
// Dir. fsync is off: a throwaway teaching database, never one with data
// you want to keep.
func (c *PostgresCluster) server(bind string, port int) *exec.Cmd {
	cmd := exec.Command(filepath.Join(c.bin, "postgres"), "-D", c.Data(), "-c", "listen_addresses="+bind, "-p", strconv.Itoa(port),
		"-k", c.Dir, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "lc_messages=C")
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	return cmd
}

// ready reports what pg_ctl waits for: the postmaster.pid of the process
// pid says it accepts connections (its 8th line, since PostgreSQL 10).
func (c *PostgresCluster) ready(pid int) bool {
	raw, err := os.ReadFile(filepath.Join(c.Data(), "postmaster.pid"))
	lines := strings.Split(string(raw), "\n")
	return err == nil && len(lines) > 7 && strings.TrimSpace(lines[0]) == strconv.Itoa(pid) &&
		strings.TrimSpace(lines[7]) == "ready"
}

// Start starts the server on bind:port in the background and waits, at
// most 30 s, until it accepts connections; when it does not, or ctx ends
// first, it stops the server again.
func (c *PostgresCluster) Start(ctx context.Context, bind string, port int) (*Daemon, error) {
	d := &Daemon{Kind: "postgres", Port: port, Dir: c.Data()}
	// A postmaster.pid copied along with the folder (cp -a), or left by a
	// server that was killed, names no server of this folder: PostgreSQL
	// would refuse to start while its pid runs.
	if d.Check() != nil {
		os.Remove(d.pidFile())
	}
	log := filepath.Join(c.Dir, "postgres.log")
	logFile, err := os.OpenFile(log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("launch: %w", err)
	}
	defer logFile.Close()
	cmd := c.server(bind, port)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := d.start(ctx, cmd, 30*time.Second, func() bool { return c.ready(d.Pid) }); err != nil {
		return nil, fmt.Errorf("PostgreSQL did not start on port %d (%w); see %s", port, err, log)
	}
	return d, nil
}

// Psql runs psql as the superuser on the socket, port port, with the
// statements on stdin (a password in them is on no command line).
func (c *PostgresCluster) Psql(ctx context.Context, port int, stdin string) error {
	return runPsql(ctx, c.command(ctx, "psql", "-h", c.Dir, "-p", strconv.Itoa(port), "-U", "postgres"), stdin)
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
	return runPsql(ctx, cmd, stdin)
}

// runPsql runs cmd, a psql command line, on the database postgres with
// stdin as its script, stopping at the first error, which holds what psql
// said on one printable line.
func runPsql(ctx context.Context, cmd *exec.Cmd, stdin string) error {
	cmd.Args = append(cmd.Args, "-d", "postgres", "-qtAX", "-v", "ON_ERROR_STOP=1")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("psql: %v: %s", err, safe.Line(string(out)))
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
	return safe.Line(f[2])
}
