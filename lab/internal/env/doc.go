// Package env is where the lab's programs find Redis and PostgreSQL, as
// the root's wallet.Client and postgres.Config read the environment: it
// connects within ConnectTimeout and turns a refusal into one line that
// says what is wrong and how to fix it, never showing a password. It also
// reads the servers' versions and Redis's command counters for the
// reports, and REDLOCK_ADDRS (RedlockAddrs).
//
// Redis may be one server or a Redis Cluster: Connect returns a
// redis.UniversalClient either way, and cluster.go holds what a cluster
// needs done differently.
package env
