package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/safe"

	"example.com/walletlock/lab/internal/env"
)

// config is the configured Redis and PostgreSQL, as internal/env
// reads them.
type config struct {
	redis                *redis.Options
	redisHost, redisPort string
	redisCluster         []string // the seeds, when REDIS_ADDR or REDIS_URL names a cluster
	pg                   *pgx.ConnConfig
	pgHost, pgPort       string
}

func readConfig() (*config, error) {
	opt, err := env.RedisOptions()
	if err != nil {
		return nil, err
	}
	pg, err := env.PostgresConfig()
	if err != nil {
		return nil, err
	}
	if pg.Database == "" {
		pg.Database = pg.User
	}
	c := &config{redis: opt.Simple(), pg: pg, pgHost: pg.Host, pgPort: strconv.Itoa(int(pg.Port))}
	if env.IsCluster(opt) {
		c.redisCluster = opt.Addrs
	}
	c.redisHost, c.redisPort, _ = net.SplitHostPort(opt.Addrs[0])
	if c.redisHost == "" {
		c.redisHost = "localhost"
	}
	return c, nil
}

func (c *config) redisAt() string { return net.JoinHostPort(c.redisHost, c.redisPort) }
func (c *config) pgAt() string    { return net.JoinHostPort(c.pgHost, c.pgPort) }

func isLocal(host string) bool { return host == "localhost" || host == "127.0.0.1" || host == "::1" }

// reachable reports whether a TCP connection to host:port opens within 2 s.
func reachable(host, port string) bool {
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(host, port), 2*time.Second)
	if err == nil {
		conn.Close()
	}
	return err == nil
}

// reachableSoon is reachable within about 2 s: the time a service that a
// package just started may take to listen.
func reachableSoon(host, port string) bool {
	for range 20 {
		if reachable(host, port) {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return false
}

// scrub blanks the configured passwords out of text, in case a server
// quotes what it was sent. A password that is also the user's name
// (walletlock:walletlock, the public default) is shown as that name anyway.
func (c *config) scrub(text string) string {
	for _, up := range [][2]string{{c.redis.Username, c.redis.Password}, {c.pg.User, c.pg.Password}} {
		if up[1] != "" && up[1] != up[0] {
			text = strings.ReplaceAll(text, up[1], "***")
		}
	}
	return safe.Line(text)
}

type state int

const (
	absent state = iota
	ok
	refused
)

// check is what a server said when we logged in.
type check struct {
	state  state
	answer string // what a refusing server answered
}

// redisCheck logs in as configured (AUTH, SELECT, PING), over TLS for
// rediss://; the password goes down the socket, never onto a command line.
func (c *config) redisCheck(ctx context.Context) check {
	if !reachable(c.redisHost, c.redisPort) {
		return check{state: absent}
	}
	o := *c.redis
	o.Protocol, o.MaxRetries, o.PoolSize, o.DisableIdentity = 2, -1, 1, true
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 2*time.Second, 3*time.Second, 3*time.Second
	rdb := redis.NewClient(&o)
	defer rdb.Close()
	err := rdb.Ping(ctx).Err()
	var reply redis.Error
	var netErr net.Error
	switch {
	case err == nil:
		return check{state: ok}
	case errors.As(err, &reply):
		return check{refused, c.scrub(reply.Error())}
	case errors.As(err, &netErr) && netErr.Timeout():
		return check{refused, "no answer to PING within 3 s: is it Redis?"}
	}
	return check{refused, "an answer that is not Redis's"}
}

// pgCheck connects as the configured user to the configured database.
func (c *config) pgCheck(ctx context.Context) check {
	if !reachable(c.pgHost, c.pgPort) {
		return check{state: absent}
	}
	cfg := c.pg.Copy()
	cfg.ConnectTimeout = 5 * time.Second
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		conn.Close(ctx)
		return check{state: ok}
	}
	var pgErr *pgconn.PgError
	var connErr *pgconn.ConnectError
	switch {
	case errors.As(err, &pgErr):
		return check{refused, c.scrub(pgErr.Message)}
	case errors.As(err, &connErr) && connErr.Unwrap() != nil:
		err = connErr.Unwrap() // without pgx's "failed to connect to `user=...`"
	}
	return check{refused, c.scrub(err.Error())}
}

// freePort is the first port after start where nothing answers.
func freePort(start int) int {
	for p := start + 1; p < start+50; p++ {
		if !reachable("127.0.0.1", strconv.Itoa(p)) {
			return p
		}
	}
	return start + 1
}

// servedHere reports whether the server at host:port is one that `up`
// started in this checkout and that still runs: a record of this
// checkout names it, and the process it names serves that port.
func (m *machine) servedHere(kind, host, port string) bool {
	if !isLocal(host) {
		return false
	}
	var recs []*record
	if kind == "redis" {
		recs, _ = m.redisRecords()
	} else if r, _ := m.pgRecord(); r != nil {
		recs = append(recs, r)
	}
	for _, r := range recs {
		if strconv.Itoa(r.Port) == port && m.running(r) {
			return true
		}
	}
	return false
}

// sqlIdent is name as an SQL identifier: as it is when it needs no
// quotes, else in double quotes.
func sqlIdent(name string) string {
	if plainIdent.MatchString(name) {
		return name
	}
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

var plainIdent = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// welcome says which servers let us in, and stops with the ways out when
// one refuses, or when nothing answers where one was asked for.
func (m *machine) welcome(c *config, r, p check) error {
	for _, s := range c.services(r, p) {
		switch s.state {
		case ok:
			m.say("%s at %s lets %s", s.name, s.at, s.in)
		case absent:
			m.say("%s: nothing answers at %s", s.name, s.at)
		}
	}
	if r.state == refused || p.state == refused {
		m.refusals(c, r, p, false)
	}
	if r.state != ok || p.state != ok {
		return errSaid
	}
	return nil
}

// service is one of the two servers, and what it said when we logged in.
type service struct {
	check
	name, at string
	in       string // whom it lets in: "us in", or "USER into DB"
}

func (c *config) services(r, p check) []service {
	return []service{{r, "Redis", c.redisAt(), "us in"}, {p, "PostgreSQL", c.pgAt(), c.pg.User + " into " + c.pg.Database}}
}

// refusals says what each refusing server answered (unless status said it
// already), how to fix it there, and the variables that make `up` run
// servers of its own on free ports.
func (m *machine) refusals(c *config, r, p check, status bool) {
	var own []string
	if r.state == refused {
		if !status {
			m.say("Redis at %s refuses us: %s", c.redisAt(), r.answer)
		}
		switch {
		case m.servedHere("redis", c.redisHost, c.redisPort):
			m.say("  fix: it is the Redis `make up` started with other settings: make down; make up")
		case strings.HasPrefix(r.answer, "NOAUTH"):
			m.say("  fix: give it the password it wants: export REDIS_URL=%s", safe.Quote("redis://:PASSWORD@"+c.redisAt()))
		case strings.HasPrefix(r.answer, "WRONGPASS"):
			m.say("  fix: give the user and password it knows: export REDIS_URL=%s", safe.Quote("redis://USER:PASSWORD@"+c.redisAt()))
		case strings.Contains(r.answer, "without any password configured"):
			m.say("  fix: it has no password: drop it from REDIS_URL")
		}
		if os.Getenv("REDIS_URL") != "" {
			own = append(own, "REDIS_URL=")
		}
		own = append(own, fmt.Sprintf("REDIS_ADDR=localhost:%d", freePort(6379)))
	}
	if p.state == refused {
		u, d := sqlIdent(c.pg.User), sqlIdent(c.pg.Database)
		pw := "<password>"
		if c.pg.Password == "walletlock" {
			pw = "walletlock" // the default, public anyway
		}
		if !status {
			m.say("PostgreSQL at %s refuses us: %s", c.pgAt(), p.answer)
		}
		// Every word of the command that comes from DATABASE_URL goes
		// through the one shell quote: pasted, it runs as it reads.
		psql := "psql -h " + safe.Quote(c.pgHost) + " -p " + c.pgPort + " -U postgres"
		createDB := " -c " + safe.Quote("CREATE DATABASE "+d+" OWNER "+u)
		switch {
		case m.servedHere("pg", c.pgHost, c.pgPort):
			m.say("  fix: it is the PostgreSQL `make up` started with other settings: make down; make up")
		case strings.HasPrefix(p.answer, `database "`) && strings.HasSuffix(p.answer, `" does not exist`):
			m.say("  fix: create the database there: %s", psql+createDB)
		case strings.Contains(p.answer, "password authentication failed"),
			strings.HasPrefix(p.answer, `role "`) && strings.HasSuffix(p.answer, `" does not exist`):
			m.say("  fix: create the role and the database there: %s", psql+" -c "+safe.Quote("CREATE ROLE "+u+" LOGIN PASSWORD '"+pw+"'")+createDB)
		}
		own = append(own, "DATABASE_URL="+safe.Quote(fmt.Sprintf("postgres://walletlock:walletlock@localhost:%d/walletlock?sslmode=disable", freePort(5432))))
	}
	it, one := "it alone", "its own on a free port"
	if r.state == refused && p.state == refused {
		it, one = "them alone", "servers of its own on free ports"
	}
	m.say("or leave %s and let `make up` start %s: export %s; make up", it, one, strings.Join(own, " "))
}
