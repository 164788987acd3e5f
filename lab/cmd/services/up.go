package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/lab/internal/launch"
)

func (m *machine) up(ctx context.Context) error {
	c, err := readConfig()
	if err != nil {
		return err
	}
	if c.redisCluster != nil {
		return fmt.Errorf("REDIS_ADDR names the nodes of a Redis Cluster (%s): `make cluster-up` starts one; `make up` is for one Redis", strings.Join(c.redisCluster, ","))
	}
	r, p := c.redisCheck(ctx), c.pgCheck(ctx)
	if r.state == refused || p.state == refused {
		return m.welcome(c, r, p)
	}
	needRedis, needPG := r.state == absent, p.state == absent
	if !needRedis && !needPG {
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
			os.WriteFile(m.state("compose"), nil, 0o644)
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
		if err := m.redisUp(ctx, c); err != nil {
			return err
		}
	}
	if needPG {
		if err := m.pgUp(ctx, c); err != nil {
			return err
		}
	}
	return m.welcome(c, c.redisCheck(ctx), c.pgCheck(ctx))
}

const windowsAdvice = "on Windows, install Docker Desktop and run `make up` again (it then uses docker-compose.yml), " +
	"or run Redis (Memurai, or redis-server in WSL) and PostgreSQL (the postgresql.org installer) yourself and set REDIS_ADDR and DATABASE_URL"

func (m *machine) down(ctx context.Context) error {
	if _, err := os.Stat(m.state("compose")); err == nil {
		m.compose(ctx, "down")
		os.Remove(m.state("compose"))
	}
	if _, err := os.Stat(m.state("redis.started")); err == nil {
		launch.StopDaemon(m.state("redis", "redis.pid"), "redis-server")
		os.Remove(m.state("redis.started"))
		m.say("stopped redis-server")
	}
	if _, err := os.Stat(m.state("pg.started")); err == nil {
		if raw, err := os.ReadFile(m.state("pg.dir")); err == nil {
			dir := strings.TrimSpace(string(raw))
			if pg, err := launch.OpenPostgresCluster(dir); err == nil {
				pg.Stop(ctx)
			}
			// A temporary folder (the repository's own one was out of the
			// user postgres's reach) would outlive the clone: it goes with
			// the server, and the next up starts afresh.
			if dir != m.state("pg") && strings.HasPrefix(filepath.Base(dir), "walletlock-pg.") {
				if os.RemoveAll(dir) == nil {
					os.Remove(m.state("pg.dir"))
				}
			}
		}
		os.Remove(m.state("pg.started"))
		m.say("stopped PostgreSQL")
	}
	return m.redlockDown(ctx)
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
	switch r.state {
	case ok:
		m.say("Redis: answers at %s and lets us in", c.redisAt())
	case refused:
		m.say("Redis: answers at %s but refuses us: %s", c.redisAt(), r.answer)
		failed = true
	case absent:
		m.say("Redis: nothing at %s", c.redisAt())
		failed = true
	}
	switch p.state {
	case ok:
		m.say("PostgreSQL: answers at %s and lets %s into %s", c.pgAt(), c.pg.User, c.pg.Database)
	case refused:
		m.say("PostgreSQL: answers at %s but refuses us: %s", c.pgAt(), p.answer)
		failed = true
	case absent:
		m.say("PostgreSQL: nothing at %s", c.pgAt())
		failed = true
	}
	for _, s := range []struct{ file, what string }{{"compose", "docker compose"}, {"redis.started", "redis-server"}, {"pg.started", "PostgreSQL"}} {
		if _, err := os.Stat(m.state(s.file)); err == nil {
			if dir, err := os.ReadFile(m.state("pg.dir")); err == nil && s.file == "pg.started" {
				s.what += " in " + strings.TrimSpace(string(dir))
			}
			m.say("started here: %s", s.what)
		}
	}
	if r.state == refused || p.state == refused {
		m.refusals(c, r, p, true)
	}
	if failed {
		return errSaid
	}
	return nil
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

func (m *machine) redisUp(ctx context.Context, c *config) error {
	if !isLocal(c.redisHost) {
		return fmt.Errorf("no Redis answers at %s, and that is not this machine: start it there, or point REDIS_ADDR at a running one", c.redisAt())
	}
	if _, err := launch.RedisBinary(); err != nil {
		return errors.New("redis-server not found: apt-get install redis-server (or brew install redis), or start Docker")
	}
	var auth []string
	user, pass := c.redis.Username, c.redis.Password
	switch {
	case user != "" && user != "default" && pass != "":
		auth = append(auth, "user "+launch.ConfQuote(user)+" on "+launch.ConfQuote(">"+pass)+" ~* &* +@all")
	case user != "" && user != "default":
		auth = append(auth, "user "+launch.ConfQuote(user)+" on nopass ~* &* +@all")
	case pass != "":
		auth = append(auth, "requirepass "+launch.ConfQuote(pass))
	}
	port, _ := strconv.Atoi(c.redisPort)
	if err := launch.StartRedisDaemon(ctx, m.state("redis"), "127.0.0.1", port, auth...); err != nil {
		return err
	}
	os.WriteFile(m.state("redis.started"), []byte(c.redisPort+"\n"), 0o644)
	m.say("redis-server %s on 127.0.0.1:%s", launch.RedisVersion(), c.redisPort)
	return nil
}

// --- local PostgreSQL --------------------------------------------------------

// pgDir is where our PostgreSQL lives: .services/pg, or, as root when
// the user postgres cannot reach the repository (a clone inside a 0700
// folder), a private temporary folder. .services/pg.dir remembers which.
func (m *machine) pgDir() (string, error) {
	if raw, err := os.ReadFile(m.state("pg.dir")); err == nil {
		return strings.TrimSpace(string(raw)), nil
	}
	dir := m.state("pg")
	if !launch.PostgresCanEnter(dir) {
		var err error
		if dir, err = os.MkdirTemp("", "walletlock-pg."); err != nil {
			return "", err
		}
	}
	return dir, os.WriteFile(m.state("pg.dir"), []byte(dir+"\n"), 0o644)
}

func (m *machine) pgUp(ctx context.Context, c *config) error {
	if !isLocal(c.pgHost) {
		return fmt.Errorf("no PostgreSQL answers at %s, and that is not this machine: start it there, or point DATABASE_URL at a running one", c.pgAt())
	}
	dir, err := m.pgDir()
	if err != nil {
		return err
	}
	pg, err := launch.OpenPostgresCluster(dir)
	if err != nil {
		return fmt.Errorf("%v; or start Docker", err)
	}
	if err := pg.Init(ctx); err != nil {
		return err
	}
	port := int(c.pg.Port)
	if err := pg.Start(ctx, port); err != nil {
		return err
	}
	os.WriteFile(m.state("pg.started"), []byte(c.pgPort+"\n"), 0o644)
	if err := pg.Psql(ctx, port, roleSQL(c)); err != nil {
		return fmt.Errorf("cannot create role %s and database %s in the local PostgreSQL (%v); see %s/postgres.log", c.pg.User, c.pg.Database, err, dir)
	}
	m.say("PostgreSQL %s on 127.0.0.1:%s, database %s", pg.PostgresVersion(), c.pgPort, c.pg.Database)
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
