// Package env is where the programs find Redis and PostgreSQL: it
// reads REDIS_URL, REDIS_ADDR and DATABASE_URL (the one place they are
// read), connects to Redis within ConnectTimeout, and turns a refusal into
// one line that says what is wrong and how to fix it, never showing a
// password. It also reads the server's version and Redis's command
// counters for the reports, and REDLOCK_ADDRS, the independent nodes of
// step 6's Redlock (RedlockAddrs), for the load test and cmd/servers.
// PostgreSQL's half is postgres.go (ConnectPostgres).
//
// Redis may be one server or a Redis Cluster (several addresses, see
// RedisOptions): Connect returns a redis.UniversalClient either way, and
// cluster.go holds what a cluster needs done differently (deleting keys in
// several slots, SCAN and INFO on every master).
//
// It is plumbing, kept out of package wallet, which is only the domain: the
// balance, the spend and the check. Every program uses it, most through
// internal/harness (which connects for steps 1 to 3), step 6 through
// the load test, and the drill directly for PostgreSQL.
package env
