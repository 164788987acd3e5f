package main

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
	"time"

	"example.com/walletlock/lab/internal/launch"
)

func (m *machine) up(ctx context.Context) (err error) {
	c, err := readConfig()
	if err != nil {
		return err
	}
	if c.redisCluster != nil {
		return fmt.Errorf("REDIS_ADDR names the nodes of a Redis Cluster (%s): `make cluster-up` starts one; `make up` is for one Redis", strings.Join(c.redisCluster, ","))
	}
	r, p := c.redisCheck(ctx), c.pgCheck(ctx)
	needRedis, needPG := r.state == absent, p.state == absent
	if r.state == refused || p.state == refused || !needRedis && !needPG {
		return m.welcome(c, r, p)
	}
	var names []string
	if needRedis {
		names = append(names, "redis")
	}
	if needPG {
		names = append(names, "postgres")
	}
	if m.dockerWorks(ctx) {
		if m.composeFits(c, names) {
			m.say("starting %s with docker compose (redis:8.10.2, postgres:18)", strings.Join(names, " "))
			if err := m.compose(ctx, append([]string{"up", "-d", "--wait"}, names...)...); err != nil {
				return fmt.Errorf("docker compose up failed (%v); see: docker compose logs", err)
			}
			if err := os.WriteFile(m.state("compose"), nil, 0o644); err != nil {
				return fmt.Errorf("cannot write %s: %w; make .services writable, and run docker compose down yourself", m.state("compose"), err)
			}
			return m.welcome(c, c.redisCheck(ctx), c.pgCheck(ctx))
		}
		m.say("Docker runs, but docker-compose.yml publishes other ports or credentials than configured: using local binaries")
	}
	if m.goos == "windows" {
		return errors.New(windowsAdvice)
	}
	installedRedis, installedPG, err := m.installMissing(ctx, c, needRedis, needPG)
	if err != nil {
		return err
	}
	// A package may have started a service of its own on our port
	// (Debian's do): use it if it lets us in rather than fight it for the
	// port.
	if installedRedis && reachableSoon(c.redisHost, c.redisPort) {
		m.say("the redis-server package started its own Redis at %s (`make down` leaves it running)", c.redisAt())
		needRedis = false
	}
	if installedPG && reachableSoon(c.pgHost, c.pgPort) {
		needPG = false
		if c.pgCheck(ctx).state == refused {
			if err := m.pgSetupPackaged(ctx, c); err != nil {
				return err
			}
		}
	}
	if needRedis {
		var rec *record
		if rec, err = m.redisUp(ctx, c); err != nil {
			return err
		}
		// An up that fails from here on (Ctrl-C too) leaves no Redis of
		// its own behind either.
		defer func() {
			if err != nil {
				rec.Stop()
				rec.remove()
				m.say("stopped the redis-server it started on port %d", rec.Port)
			}
		}()
	}
	if needPG {
		if err = m.pgUp(ctx, c); err != nil {
			return err
		}
	}
	return m.welcome(c, c.redisCheck(ctx), c.pgCheck(ctx))
}

const windowsAdvice = "on Windows, install Docker Desktop and run `make up` again (it then uses docker-compose.yml), " +
	"or run Redis (Memurai, or redis-server in WSL) and PostgreSQL (the postgresql.org installer) yourself and set REDIS_ADDR and DATABASE_URL"

func (m *machine) down(ctx context.Context) error {
	failed := false
	fail := func(err error) {
		if m.sayAll(err) {
			failed = true
		}
	}
	if _, err := os.Stat(m.state("compose")); err == nil {
		fail(m.compose(ctx, "down"))
		fail(removeState(m.state("compose")))
	}
	redis, err := m.redisRecords()
	fail(err)
	for _, r := range redis {
		fail(m.stopRecorded(r, "redis-server"))
	}
	pg, err := m.pgRecord()
	fail(err)
	if pg != nil {
		ours := m.ours(pg)
		if err := m.stopRecorded(pg, "PostgreSQL"); err != nil {
			fail(err)
		} else {
			// A temporary folder (the repository's own one was out of the
			// user postgres's reach) would outlive the clone: it goes with
			// the server, and the next up starts afresh.
			if home := filepath.Dir(pg.Dir); ours && m.pgTemporary(home) {
				fail(os.RemoveAll(home))
			}
			fail(removeState(m.state("pg.dir")))
		}
	}
	fail(m.redlockDown(ctx))
	if failed {
		return errSaid
	}
	return nil
}

// removeState removes a file of .services, if it is there.
func removeState(file string) error {
	if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cannot remove %s: %w; make .services writable, then run this again", file, err)
	}
	return nil
}

func (m *machine) status(ctx context.Context) error {
	c, err := readConfig()
	if err != nil {
		return err
	}
	failed := false
	if c.redisCluster != nil {
		m.say("Redis: REDIS_ADDR names a Redis Cluster (%s): see `make cluster-status`", strings.Join(c.redisCluster, ","))
	}
	r, p := c.redisCheck(ctx), c.pgCheck(ctx)
	for _, s := range c.services(r, p) {
		switch s.state {
		case ok:
			m.say("%s: answers at %s and lets %s", s.name, s.at, s.in)
		case refused:
			m.say("%s: answers at %s but refuses us: %s", s.name, s.at, s.answer)
			failed = true
		case absent:
			m.say("%s: nothing at %s", s.name, s.at)
			failed = true
		}
	}
	if _, err := os.Stat(m.state("compose")); err == nil {
		m.say("started here: docker compose")
	}
	redis, err := m.redisRecords()
	if err != nil {
		m.say("%s", err)
	}
	for _, rec := range redis {
		m.sayRecord(rec, "redis-server")
	}
	if pg, err := m.pgRecord(); err != nil {
		m.say("%s", err)
	} else if pg != nil {
		m.sayRecord(pg, "PostgreSQL in "+filepath.Dir(pg.Dir))
	}
	if r.state == refused || p.state == refused {
		m.refusals(c, r, p, true)
	}
	if failed {
		return errSaid
	}
	return nil
}

// sayRecord says what runs of a server this checkout's .services names.
func (m *machine) sayRecord(r *record, what string) {
	switch {
	case r.Checkout == "":
		m.say("started here, by an older version: %s on port %d", what, r.Port)
	case !m.ours(r):
		m.say("recorded here, but started by the checkout at %s: %s on port %d", filepath.Dir(r.Checkout), what, r.Port)
	case r.Check() == nil:
		m.say("started here: %s on port %d (pid %d)", what, r.Port, r.Pid)
	default:
		m.say("started here: %s on port %d, not running now", what, r.Port)
	}
}

// --- Docker ----------------------------------------------------------------

func (m *machine) dockerWorks(ctx context.Context) bool {
	if _, err := exec.LookPath("docker"); err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return exec.CommandContext(ctx, "docker", "info").Run() == nil
}

// composeFits reports whether docker-compose.yml publishes what we are
// configured for: its ports and credentials, on this machine.
func (m *machine) composeFits(c *config, names []string) bool {
	for _, name := range names {
		switch name {
		case "redis":
			if !isLocal(c.redisHost) || c.redisPort != "6379" || c.redis.Password != "" || c.redis.TLSConfig != nil {
				return false
			}
		case "postgres":
			if !isLocal(c.pgHost) || c.pgPort != "5432" || c.pg.User != "walletlock" || c.pg.Password != "walletlock" || c.pg.Database != "walletlock" {
				return false
			}
		}
	}
	return true
}

// compose runs docker compose in the repository, its output on stderr.
func (m *machine) compose(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "docker", append([]string{"compose"}, args...)...)
	cmd.Dir, cmd.Stdout, cmd.Stderr = m.root, m.stderr, m.stderr
	return cmd.Run()
}

// --- installing what is missing ----------------------------------------------

// installMissing installs the binaries that the servers we must start on
// this machine lack, and reports which it installed.
func (m *machine) installMissing(ctx context.Context, c *config, needRedis, needPG bool) (redis, pg bool, err error) {
	var apt, brew, where []string
	if _, err := exec.LookPath("redis-server"); err != nil && needRedis && isLocal(c.redisHost) {
		apt, brew, where = append(apt, "redis-server"), append(brew, "redis"), append(where, c.redisAt())
		redis = true
	}
	if _, err := launch.PostgresBinDir(); err != nil && needPG && isLocal(c.pgHost) {
		apt, brew, where = append(apt, "postgresql"), append(brew, "postgresql@17"), append(where, c.pgAt())
		pg = true
	}
	if !redis && !pg {
		return false, false, nil
	}
	why := fmt.Sprintf("nothing answers at %s and %s is not installed", strings.Join(where, " "), strings.Join(apt, " "))
	// The drill's partition nemesis needs ip(8) (iproute2); a bare machine
	// gets it with the servers.
	if _, err := exec.LookPath("ip"); err != nil && m.goos == "linux" {
		apt = append(apt, "iproute2")
	}
	return redis, pg, m.install(ctx, why, strings.Join(apt, " "), strings.Join(brew, " "))
}

// redisServer makes sure that redis-server is here to start, installing
// it first (why says what for) when it is missing.
func (m *machine) redisServer(ctx context.Context, why string) error {
	if m.goos == "windows" {
		return errors.New(windowsAdvice)
	}
	if _, err := exec.LookPath("redis-server"); err == nil {
		return nil
	}
	return m.install(ctx, why, "redis-server", "redis")
}

// install installs packages with the machine's package manager where that
// is safe, saying what and why in one line, or fails with the command to
// run.
func (m *machine) install(ctx context.Context, why, apt, brew string) error {
	log := m.state("install.log")
	logFile, err := os.Create(log)
	if err != nil {
		return err
	}
	defer logFile.Close()
	runLogged := func(args ...string) error {
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		return cmd.Run()
	}
	if m.goos == "darwin" {
		if _, err := exec.LookPath("brew"); err != nil {
			return fmt.Errorf("%s, and Homebrew is not installed: install it (https://brew.sh), then run: brew install %s; or start Docker", why, brew)
		}
		m.say("installing %s with brew: %s", brew, why)
		if err := runLogged(append([]string{"brew", "install"}, strings.Fields(brew)...)...); err != nil {
			return fmt.Errorf("brew install %s failed (see %s); run it yourself, then make up", brew, log)
		}
		return nil
	}
	if _, err := exec.LookPath("apt-get"); err != nil {
		cmd := "your package manager"
		for _, pm := range [][2]string{
			{"dnf", "sudo dnf install -y redis postgresql-server"},
			{"apk", "sudo apk add redis postgresql"},
			{"pacman", "sudo pacman -S --needed redis postgresql"},
			{"zypper", "sudo zypper install -y redis postgresql-server"},
		} {
			if _, err := exec.LookPath(pm[0]); err == nil {
				cmd = pm[1]
				break
			}
		}
		return fmt.Errorf("%s: install redis-server and PostgreSQL (initdb, pg_ctl) with %s, or start Docker", why, cmd)
	}
	var sudo []string
	if m.uid != 0 {
		sudo = []string{"sudo"}
		if _, err := exec.LookPath("sudo"); err != nil {
			return fmt.Errorf("%s: as root, run: apt-get update && apt-get install -y %s; or start Docker", why, apt)
		}
		if exec.CommandContext(ctx, "sudo", "-n", "true").Run() != nil {
			if !m.terminal {
				return fmt.Errorf("%s, and sudo needs a password: run sudo apt-get update && sudo apt-get install -y %s; then make up", why, apt)
			}
			m.say("installing %s with sudo apt-get: %s; sudo may ask for your password", apt, why)
			v := exec.CommandContext(ctx, "sudo", "-v")
			v.Stdin, v.Stdout, v.Stderr = os.Stdin, os.Stderr, os.Stderr
			if v.Run() != nil {
				return fmt.Errorf("sudo refused: run sudo apt-get update && sudo apt-get install -y %s; then make up", apt)
			}
		} else {
			m.say("installing %s with sudo apt-get: %s", apt, why)
		}
	} else {
		m.say("installing %s with apt-get: %s", apt, why)
	}
	s := strings.Join(sudo, "")
	if s != "" {
		s += " "
	}
	aptGet := append(sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get")
	if err := runLogged(append(aptGet, "update", "-qq")...); err != nil {
		return fmt.Errorf("apt-get update failed (see %s); run %sapt-get update && %sapt-get install -y %s; then make up", log, s, s, apt)
	}
	if err := runLogged(append(append(aptGet, "install", "-y", "-qq", "--no-install-recommends"), strings.Fields(apt)...)...); err != nil {
		return fmt.Errorf("apt-get install failed (see %s); run %sapt-get install -y %s; then make up", log, s, apt)
	}
	return nil
}

// --- local Redis ---------------------------------------------------------------

// redisRecords are the records of the Redis servers `up` started here,
// one per port, and the one an older version kept in redis.started.
func (m *machine) redisRecords() ([]*record, error) {
	var out []*record
	var errs []error
	files, _ := filepath.Glob(m.state("redis-*", "started"))
	for _, f := range append([]string{m.state("redis.started")}, files...) {
		r, err := m.readRecord(f, "redis-server", m.state("redis"))
		if err != nil {
			errs = append(errs, err)
		} else if r != nil {
			out = append(out, r)
		}
	}
	return out, errors.Join(errs...)
}

// redisUp starts the Redis of c here and returns its record.
func (m *machine) redisUp(ctx context.Context, c *config) (*record, error) {
	if !isLocal(c.redisHost) {
		return nil, fmt.Errorf("no Redis answers at %s, and that is not this machine: start it there, or point REDIS_ADDR at a running one", c.redisAt())
	}
	if c.redis.TLSConfig != nil {
		return nil, fmt.Errorf("nothing answers at %s, and REDIS_URL asks for TLS (rediss://), which the Redis `make up` starts does not speak: "+
			"use redis:// for it, or start your Redis with TLS yourself", c.redisAt())
	}
	if _, err := launch.RedisBinary(); err != nil {
		return nil, errors.New("redis-server not found: apt-get install redis-server (or brew install redis), or start Docker")
	}
	// Only the configured credentials get in: with a user of its own, the
	// default user (no password, every command) is switched off.
	var conf []string
	user, pass := c.redis.Username, c.redis.Password
	switch {
	case user != "" && user != "default" && pass != "":
		conf = append(conf, "user default off", "user "+launch.ConfQuote(user)+" on "+launch.ConfQuote(">"+pass)+" ~* &* +@all")
	case user != "" && user != "default":
		conf = append(conf, "user default off", "user "+launch.ConfQuote(user)+" on nopass ~* &* +@all")
	case pass != "":
		conf = append(conf, "requirepass "+launch.ConfQuote(pass))
	}
	if c.redis.DB >= 16 { // the default is 16 databases, 0 to 15
		conf = append(conf, "databases "+strconv.Itoa(c.redis.DB+1))
	}
	port, _ := strconv.Atoi(c.redisPort)
	rec, err := m.startRedis(ctx, m.state("redis-"+c.redisPort), bindFor(c.redisHost), port, conf...)
	if err != nil {
		return nil, errors.New(c.scrub(err.Error())) // it may quote a line of its configuration
	}
	m.say("redis-server %s on %s", launch.RedisVersion(), net.JoinHostPort(bindFor(c.redisHost), c.redisPort))
	return rec, nil
}

// startRedis starts a redis-server of ours in dir on bind:port, with
// lines more of its configuration (see launch.StartRedisDaemon). Its
// record, dir/started, is written before it starts, so that a start cut
// short leaves what down reads, and completed once it runs; a start that
// fails leaves neither record nor server.
func (m *machine) startRedis(ctx context.Context, dir, bind string, port int, lines ...string) (*record, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("cannot make %s: %w; make .services writable", dir, err)
	}
	rec := m.newRecord(filepath.Join(dir, "started"), "redis-server", port, dir)
	if err := rec.save(); err != nil {
		return nil, err
	}
	d, err := launch.StartRedisDaemon(ctx, dir, bind, port, lines...)
	if err == nil {
		rec.Daemon = *d
		if err = rec.save(); err != nil {
			d.Stop()
		}
	}
	if err != nil {
		rec.remove()
		return nil, err
	}
	return rec, nil
}

// bindFor is the address a server of ours listens on for host: ::1 when
// that is what the configuration names, else 127.0.0.1 (which localhost
// reaches too).
func bindFor(host string) string {
	if host == "::1" {
		return host
	}
	return "127.0.0.1"
}

// --- local PostgreSQL --------------------------------------------------------

// pgRecord is the record of the PostgreSQL `up` started here, or nil. An
// older version's (the port alone) names its folder in pg.dir.
func (m *machine) pgRecord() (*record, error) {
	dir := m.state("pg")
	if raw, err := os.ReadFile(m.state("pg.dir")); err == nil {
		dir = strings.TrimSpace(string(raw))
	}
	return m.readRecord(m.state("pg.started"), "postgres", filepath.Join(dir, "data"))
}

// pgTemporary reports whether home, the folder of a PostgreSQL of ours,
// is a temporary one that pgHome made, not the repository's.
func (m *machine) pgTemporary(home string) bool {
	return !inside(home, m.state()) && strings.HasPrefix(filepath.Base(home), "walletlock-pg.")
}

// pgHome is where our PostgreSQL lives: the folder of the one `up`
// started here before, else .services/pg, or, as root when the user
// postgres cannot reach the repository (a clone inside a 0700 folder), a
// private temporary folder, which the record names.
func (m *machine) pgHome(old *record, port int) (string, error) {
	if old != nil && m.ours(old) {
		home := filepath.Dir(old.Dir)
		if old.Check() == nil {
			return "", fmt.Errorf("the PostgreSQL this checkout started serves %s on port %d, and one folder serves one port: "+
				"set the port of DATABASE_URL to %d, or run make down first", home, old.Port, old.Port)
		}
		if _, err := os.Stat(home); err == nil {
			return home, nil
		}
	}
	if home := m.state("pg"); launch.PostgresCanEnter(home) {
		return home, nil
	}
	return os.MkdirTemp("", "walletlock-pg.")
}

func (m *machine) pgUp(ctx context.Context, c *config) (err error) {
	if !isLocal(c.pgHost) {
		return fmt.Errorf("no PostgreSQL answers at %s, and that is not this machine: start it there, or point DATABASE_URL at a running one", c.pgAt())
	}
	port := int(c.pg.Port)
	old, err := m.pgRecord()
	if err != nil {
		return err
	}
	home, err := m.pgHome(old, port)
	if err != nil {
		return err
	}
	rec := m.newRecord(m.state("pg.started"), "postgres", port, filepath.Join(home, "data"))
	// Whatever fails from here on (an interrupt too) leaves no record, no
	// server and no temporary folder behind.
	var started *launch.Daemon
	defer func() {
		if err == nil {
			return
		}
		if started != nil {
			started.Stop()
		}
		rec.remove()
		if m.pgTemporary(home) {
			os.RemoveAll(home)
		}
	}()
	if err := rec.save(); err != nil {
		return err
	}
	if err := removeState(m.state("pg.dir")); err != nil {
		return err
	}
	pg, err := launch.OpenPostgresCluster(home)
	if err != nil {
		return fmt.Errorf("%v; or start Docker", err)
	}
	if err := pg.Init(ctx); err != nil {
		return err
	}
	if started, err = pg.Start(ctx, bindFor(c.pgHost), port); err != nil {
		return err
	}
	rec.Daemon = *started
	if err := rec.save(); err != nil {
		return err
	}
	if err := pg.Psql(ctx, port, roleSQL(c)); err != nil {
		return fmt.Errorf("cannot create role %s and database %s in the local PostgreSQL (%s); see %s", c.pg.User, c.pg.Database, c.scrub(err.Error()), filepath.Join(home, "postgres.log"))
	}
	m.say("PostgreSQL %s on %s, database %s", pg.PostgresVersion(), net.JoinHostPort(bindFor(c.pgHost), c.pgPort), c.pg.Database)
	return nil
}

// pgSetupPackaged gives the server that the postgresql package we just
// installed started on our port (new and empty) our role and database, as
// its user postgres over its socket.
func (m *machine) pgSetupPackaged(ctx context.Context, c *config) error {
	m.say("the postgresql package started its own server on port %s; creating role %s and database %s in it (`make down` leaves it running)", c.pgPort, c.pg.User, c.pg.Database)
	if err := launch.PackagedPsql(ctx, int(c.pg.Port), roleSQL(c)); err != nil {
		return fmt.Errorf("cannot create role %s and database %s there (%v); do it as its postgres user, or set DATABASE_URL to another port", c.pg.User, c.pg.Database, err)
	}
	return nil
}

// roleSQL is the psql script that gives the configured user its password
// and database: fed on stdin, so the password is on no command line.
func roleSQL(c *config) string {
	str := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), "'", "''") + "'"
	}
	lines := []string{
		`\set u ` + str(c.pg.User), `\set p ` + str(c.pg.Password), `\set d ` + str(c.pg.Database),
		`SELECT format('CREATE ROLE %I LOGIN', :'u') WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = :'u')`, `\gexec`,
	}
	if c.pg.Password != "" {
		lines = append(lines, `SELECT format('ALTER ROLE %I LOGIN PASSWORD %L', :'u', :'p')`, `\gexec`)
	}
	lines = append(lines, `SELECT format('CREATE DATABASE %I OWNER %I', :'d', :'u') WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = :'d')`, `\gexec`)
	return strings.Join(lines, "\n") + "\n"
}
