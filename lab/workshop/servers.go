package workshop

// The race's servers: a redis-server and a PostgreSQL of the room's own,
// started by make room RACE=1 and removed, with every key and row, when
// it ends. Both listen on 127.0.0.1 alone. The laptops reach them through
// proxies (lab/internal/wire) on the address the facilitator chose: the
// one in front of Redis reads every command, with the ACL user of the
// connection that sent it, so that the page can say whose command did
// what. The shared Redis and PostgreSQL of make up are never touched.
//
// Every laptop that joins gets a Redis user and a PostgreSQL role of its
// own, each with a password of its own. The Redis user may touch only its
// own keys (room:NAME:*) and the shared wallet's (room:shared:*), and runs
// no command that reaches beyond them (FLUSHALL, FLUSHDB, CONFIG, KEYS,
// DEBUG, SHUTDOWN, ACL, SELECT, ...). The PostgreSQL role may read and
// update the wallets' table, and row-level security shows it only its own
// wallet's row and the shared one: it inserts and deletes none.

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/wire"
	"example.com/walletlock/wallet/postgres"
)

// sharedOwner owns the shared wallet's row: no role is called that.
const sharedOwner = "room:shared"

// servers are the race's Redis and PostgreSQL, and their proxies.
type servers struct {
	g      launch.Group
	dir    string
	redis  *launch.Redis
	admin  *redis.Client // the room's own user on its Redis, past the proxy
	pg     *launch.Postgres
	pool   *pgxpool.Pool   // the superuser, on the Unix socket
	store  *postgres.Store // the superuser's, which sees every wallet
	rproxy *wire.Proxy     // the laptops' Redis
	pproxy *wire.Proxy     // the laptops' PostgreSQL
}

// startServers starts the race's servers, locks them down, and only then
// opens the proxies on host, at ports redisPort and pgPort (0: any).
func startServers(ctx context.Context, host string, redisPort, pgPort int) (s *servers, err error) {
	s = &servers{}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.dir, err = os.MkdirTemp("", "walletlock-room-"); err != nil {
		return s, err
	}
	if s.redis, err = s.g.StartRedis(ctx, s.dir); err != nil {
		return s, err
	}
	// Users first, then the default user off: from then on every
	// connection must log in.
	pw := rand.Text()
	setup := redis.NewClient(&redis.Options{Addr: s.redis.Addr})
	err = setup.Do(ctx, "ACL", "SETUSER", "room", "on", ">"+pw, "~*", "&*", "+@all").Err()
	if err == nil {
		err = setup.Do(ctx, "ACL", "SETUSER", "default", "off", "resetpass", "-@all").Err()
	}
	setup.Close()
	if err != nil {
		return s, fmt.Errorf("lock the room's Redis down: %w", err)
	}
	s.admin = redis.NewClient(&redis.Options{Addr: s.redis.Addr, Username: "room", Password: pw})

	if s.pg, err = s.g.StartPostgresLocked(ctx, "postgres"); err != nil {
		return s, err
	}
	if s.pool, err = pgxpool.New(ctx, s.pg.SocketURL("postgres")); err != nil {
		return s, err
	}
	if s.store, err = postgres.Open(ctx, s.pool, sharedOwner); err != nil {
		return s, err
	}
	if _, err = s.pool.Exec(ctx, `ALTER TABLE walletlock_wallets ENABLE ROW LEVEL SECURITY;
		CREATE POLICY room ON walletlock_wallets USING (owner = current_user OR owner = '`+sharedOwner+`');
		REVOKE ALL ON SCHEMA public FROM PUBLIC`); err != nil {
		return s, fmt.Errorf("lock the room's PostgreSQL down: %w", err)
	}

	listen := func(port int) string { return net.JoinHostPort(host, strconv.Itoa(port)) }
	if s.rproxy, err = wire.Listen(listen(redisPort), s.redis.Addr); err != nil {
		return s, err
	}
	s.pproxy, err = wire.ListenRaw(listen(pgPort), s.pg.Addr)
	return s, err
}

// close removes the servers, their keys and rows with them, and closes
// the proxies.
func (s *servers) close() {
	for _, p := range []*wire.Proxy{s.rproxy, s.pproxy} {
		if p != nil {
			p.Close()
		}
	}
	if s.admin != nil {
		s.admin.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.pg != nil {
		s.pg.Close()
	}
	s.g.KillAll(5 * time.Second)
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Creds are what a laptop gets when it joins: where the race's servers
// are, and its own user on each.
type Creds struct {
	Name     string `json:"name"`
	Redis    string `json:"redis"` // host:port of the room's Redis, through its proxy
	User     string `json:"user"`
	Password string `json:"password"`
	Postgres string `json:"postgres"` // a URL, with its own role and password
	Prefix   string `json:"prefix"`   // its own keys: room:NAME:
	Wallet   int64  `json:"wallet"`   // its own wallet, for round 1
}

// Shared are the shared wallet's keys and its id.
const (
	sharedPrefix = "room:shared:"
	sharedWallet = 1
)

// addUser makes name's Redis user and PostgreSQL role, each with a new
// password, and its wallet, numbered wallet.
func (s *servers) addUser(ctx context.Context, name string, wallet int64) (Creds, error) {
	c := Creds{Name: name, Redis: s.rproxy.Addr(), User: "room-" + name, Password: rand.Text(),
		Prefix: "room:" + name + ":", Wallet: wallet}
	err := s.admin.Do(ctx, "ACL", "SETUSER", c.User, "reset", "on", ">"+c.Password,
		"~"+c.Prefix+"*", "~"+sharedPrefix+"*", "resetchannels", "+@all", "-@dangerous", "-@admin",
		"-flushall", "-flushdb", "-config", "-keys", "-debug", "-shutdown", "-acl", "-select", "-move",
		"-swapdb", "-script|flush", "-function").Err()
	if err != nil {
		return c, fmt.Errorf("the Redis user of %s: %w", name, err)
	}
	role := pgx.Identifier{ownerOf(c.User)}.Sanitize()
	_, err = s.pool.Exec(ctx, fmt.Sprintf(`CREATE ROLE %[1]s LOGIN PASSWORD '%[2]s';
		GRANT USAGE, CREATE ON SCHEMA public TO %[1]s; GRANT SELECT, UPDATE ON walletlock_wallets TO %[1]s`, role, c.Password))
	if err == nil {
		_, err = s.pool.Exec(ctx, "INSERT INTO walletlock_wallets (id, balance, owner) VALUES ($1, 0, $2) ON CONFLICT (id) DO NOTHING",
			wallet, ownerOf(c.User))
	}
	if err != nil {
		return c, fmt.Errorf("the PostgreSQL role of %s: %w", name, err)
	}
	c.Postgres = fmt.Sprintf("postgres://%s:%s@%s/postgres?sslmode=disable", ownerOf(c.User), c.Password, s.pproxy.Addr())
	return c, nil
}
