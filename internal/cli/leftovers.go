package cli

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/services"
)

// RedisDel returns the command that deletes keys from the server opt
// describes, for the line that names what a run could not clean up:
//
//	redis-cli del 'walletlock:demo:step2:balance:{wallet:42}'
//
// It adds -h and -p for a server other than localhost:6379, -n for another
// database, --tls and --askpass where needed, and never a user name or a
// password.
func RedisDel(opt *redis.Options, keys ...string) string {
	quoted := make([]string, len(keys))
	for i, k := range keys {
		quoted[i] = shellQuote(k)
	}
	return redisCLI(opt) + " del " + strings.Join(quoted, " ")
}

// RedisDelPrefix returns the command that deletes every key under prefix,
// for a run that wrote too many keys to name:
//
//	redis-cli --scan --pattern 'walletlock:demo:step6:*' | xargs redis-cli del
func RedisDelPrefix(opt *redis.Options, prefix string) string {
	pattern := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(prefix) + "*"
	cli := redisCLI(opt)
	return cli + " --scan --pattern " + shellQuote(pattern) + " | xargs " + cli + " del"
}

// PostgresDelete returns the command that deletes the wallet rows of owner
// (a run's prefix, see wallet.Store.Owned) whose ids are given:
//
//	psql "$DATABASE_URL" -c 'DELETE FROM walletlock_wallets WHERE owner = '\''walletlock:demo:step5:'\'' AND id IN (42)'
//
// It names the database by its variable, never by the URL, which may hold
// a password; without DATABASE_URL, by the default URL without its
// password, which psql then asks for.
func PostgresDelete(owner string, ids ...int64) string {
	target := `"$DATABASE_URL"`
	if services.DatabaseURL() == services.DefaultDatabaseURL {
		if u, err := url.Parse(services.DefaultDatabaseURL); err == nil {
			u.User = url.User(u.User.Username())
			target = shellQuote(u.String())
		}
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	sql := "DELETE FROM walletlock_wallets WHERE owner = '" + strings.ReplaceAll(owner, "'", "''") + "' AND id IN (" + strings.Join(list, ", ") + ")"
	return "psql " + target + " -c " + shellQuote(sql)
}

func redisCLI(opt *redis.Options) string {
	args := []string{"redis-cli"}
	if host, port, err := net.SplitHostPort(opt.Addr); err == nil && opt.Addr != "localhost:6379" {
		args = append(args, "-h", host, "-p", port)
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

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
