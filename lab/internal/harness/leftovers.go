package harness

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/env"
)

// RedisDelPrefix returns the command that deletes every key under prefix,
// for a run that wrote too many keys to name:
//
//	redis-cli --scan --pattern 'walletlock:loadtest:*' | xargs redis-cli del
//
// On a cluster it scans every master and deletes key by key.
func RedisDelPrefix(opt *redis.UniversalOptions, prefix string) string {
	pattern := safe.Quote(env.GlobEscape(prefix) + "*")
	if !env.IsCluster(opt) {
		cli := redisCLI(opt, "")
		return cli + " --scan --pattern " + pattern + " | xargs " + cli + " del"
	}
	node := redisCLI(opt, "$n")
	return "for n in $(" + redisCLI(opt, opt.Addrs[0]) + ` cluster nodes | awk '/master/ {sub(/@.*/, "", $2); print $2}'); do ` +
		node + " --scan --pattern " + pattern + " | xargs -n 1 " + node + " del; done"
}

// PostgresDeleteRange returns the command that deletes the wallet rows of
// owner (a run's prefix) with ids first .. first+n-1. It names the
// database by its variable, never by the URL, which may hold a password
// (the default URL without its password, without DATABASE_URL):
//
//	psql "$DATABASE_URL" -c 'DELETE FROM walletlock_wallets WHERE owner = '\''walletlock:loadtest:'\'' AND id BETWEEN 7 AND 9'
func PostgresDeleteRange(owner string, first int64, n int) string {
	return psql(fmt.Sprintf("DELETE FROM walletlock_wallets WHERE owner = %s AND id BETWEEN %d AND %d", sqlString(owner), first, first+int64(n)-1))
}

// PostgresDeleteOwner is PostgresDeleteRange for every wallet owner owns.
func PostgresDeleteOwner(owner string) string {
	return psql("DELETE FROM walletlock_wallets WHERE owner = " + sqlString(owner))
}

// PostgresDeletePrefix returns the command that deletes the wallet rows of
// every owner under prefix, LIKE's wildcards in it escaped.
func PostgresDeletePrefix(prefix string) string {
	like := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_").Replace(prefix) + "%"
	return psql("DELETE FROM walletlock_wallets WHERE owner LIKE " + sqlString(like) + " ESCAPE '!'")
}

// psql returns the command that runs sql in the programs' database, named
// as PostgresDeleteRange says.
func psql(sql string) string {
	target := `"$DATABASE_URL"`
	if env.DatabaseURL() == env.DefaultDatabaseURL {
		if u, err := url.Parse(env.DefaultDatabaseURL); err == nil {
			u.User = url.User(u.User.Username())
			target = safe.Quote(u.String())
		}
	}
	return "psql " + target + " -c " + safe.Quote(sql)
}

// sqlString quotes s as an SQL string literal.
func sqlString(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// redisCLI is the redis-cli command for the server opt describes; for a
// cluster node, node is its address (or "$n", a shell variable holding it)
// and the command follows redirections (-c).
func redisCLI(opt *redis.UniversalOptions, node string) string {
	args := []string{"redis-cli"}
	switch {
	case node == "$n":
		args = append(args, "-c", "-h", `"${n%:*}"`, "-p", `"${n##*:}"`)
	case node != "":
		host, port, _ := net.SplitHostPort(node)
		args = append(args, "-c", "-h", host, "-p", port)
	case opt.Addrs[0] != "localhost:6379":
		if host, port, err := net.SplitHostPort(opt.Addrs[0]); err == nil {
			args = append(args, "-h", host, "-p", port)
		}
	}
	if opt.DB != 0 {
		args = append(args, "-n", strconv.Itoa(opt.DB))
	}
	if opt.TLSConfig != nil {
		args = append(args, "--tls")
	}
	if opt.Password != "" {
		args = append(args, "--askpass")
	}
	return strings.Join(args, " ")
}
