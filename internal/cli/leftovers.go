package cli

import (
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/wallet"
)

// When a clean-up fails (a frozen or restarting service, a Ctrl-C that
// left no time), a program names what it left in one line, with the
// command that removes it. The commands below never contain a password:
// where the server needs one, they name the environment variable that
// holds the URL instead of printing it.

// RedisDel returns a redis-cli command that deletes keys on the server
// opt describes, such as
//
//	redis-cli del 'walletlock:demo:step4:balance:{wallet:42}'
//
// with -h and -p when the server is not the default one, and
// -u "$REDIS_URL" when it needs credentials, TLS or a database other
// than 0, which only REDIS_URL can set.
func RedisDel(opt *redis.Options, keys ...string) string {
	cmd := "redis-cli"
	switch {
	case opt.Username != "" || opt.Password != "" || opt.TLSConfig != nil || opt.DB != 0:
		cmd += ` -u "$REDIS_URL"`
	case opt.Addr != wallet.DefaultRedisAddr:
		if host, port, err := net.SplitHostPort(opt.Addr); err == nil {
			cmd += " -h " + ShellQuote(host) + " -p " + ShellQuote(port)
		}
	}
	cmd += " del"
	for _, k := range keys {
		cmd += " " + ShellQuote(k)
	}
	return cmd
}

// PostgresDelete returns a psql command that deletes the wallet rows of
// owner (a run's key prefix, see wallet.Store.Owned) whose ids are given,
// such as
//
//	psql "$DATABASE_URL" -c "DELETE FROM walletlock_wallets WHERE owner = 'walletlock:demo:step5:' AND id IN (42)"
//
// Without DATABASE_URL it names the default database without its
// password, which psql then asks for.
func PostgresDelete(owner string, ids ...int64) string {
	target := `"$DATABASE_URL"`
	if wallet.DatabaseURL() == wallet.DefaultDatabaseURL {
		u, err := url.Parse(wallet.DefaultDatabaseURL)
		if err == nil {
			u.User = url.User(u.User.Username())
			target = ShellQuote(u.String())
		}
	}
	sql := "DELETE FROM walletlock_wallets WHERE owner = '" + strings.ReplaceAll(owner, "'", "''") + "'"
	if len(ids) > 0 {
		list := make([]string, len(ids))
		for i, id := range ids {
			list[i] = strconv.FormatInt(id, 10)
		}
		sql += " AND id IN (" + strings.Join(list, ", ") + ")"
	}
	return "psql " + target + " -c " + ShellQuote(sql)
}

// ShellQuote quotes s for a POSIX shell. Text that holds single quotes
// (as SQL does) goes in double quotes when nothing in it would expand
// there; anything else goes in single quotes.
func ShellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@,+%", r))
	}) {
		return s
	}
	if strings.Contains(s, "'") && !strings.ContainsAny(s, "\"$`\\!") {
		return `"` + s + `"`
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
