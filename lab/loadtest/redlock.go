package loadtest

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/redlock"
)

// The redlock strategy: go-redsync's mutex over three independent Redis
// nodes (`make redlock-up`, or REDLOCK_ADDRS). The balances stay in the
// wallets' Redis; only the lock moves, so the row shows what a majority of
// three costs against one node.

// Redlock names the strategy, for a program that must leave it out when
// its nodes are not running (see redlock.ErrNodesDown).
const Redlock = "redlock"

// openRedlock connects to the Redlock nodes (redlock.Dial) with pools sized
// like the wallets' Redis, counting their commands with calls. Its error
// wraps ErrBadConfig when REDLOCK_ADDRS names one node twice.
func openRedlock(ctx context.Context, cfg Config, calls *env.CallCounter) (*redlock.Nodes, error) {
	addrs, err := env.RedlockAddrs()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadConfig, err)
	}
	nodes, err := redlock.Dial(ctx, addrs, func(o *redis.Options) {
		o.PoolSize = cfg.RedisPool()
		o.PoolTimeout = cfg.Timeout
		o.ReadTimeout, o.WriteTimeout = commandTimeout, commandTimeout
		o.ReadBufferSize, o.WriteBufferSize = connBuffer, connBuffer
	})
	if errors.Is(err, env.ErrSameRedlockNode) {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	if err != nil {
		return nil, err // one line: how many answer, and the fix
	}
	for _, c := range nodes.Clients() {
		c.AddHook(calls)
	}
	return nodes, nil
}

// commandStats reads Redis's command counts and, in a redlock phase, adds
// those of every Redlock node. A node that cannot be read makes the count
// unknown (see CommandStats.Since), never short.
func (r *runner) commandStats(ctx context.Context, s strategy) (env.CommandStats, error) {
	stats, err := env.ReadCommandStats(ctx, r.rdb)
	if err != nil || s.name != Redlock || r.redlock == nil {
		return stats, err
	}
	for i, c := range r.redlock.Clients() {
		node, err := env.ReadCommandStats(ctx, c)
		if err != nil && r.downAtDial(i) {
			continue // down from the start: it ran nothing of this run's
		}
		if err != nil {
			stats["redlock node unread"] = -1
			return stats, nil
		}
		// Summed per command, so that Since leaves out the overhead
		// (INFO, PING) of the nodes as of the wallets' Redis.
		for name, n := range node {
			stats[name] += n
		}
	}
	return stats, nil
}

// downAtDial reports whether Redlock node i did not answer when the run
// dialled the nodes (a minority may be down: see redlock.Dial).
func (r *runner) downAtDial(i int) bool {
	return slices.Contains(r.redlock.DownAtDial(), r.redlock.Addrs()[i])
}

// clearRedlock deletes every key under the run's prefix on every Redlock
// node: locks an interrupted earlier run left, or this run's.
func (r *runner) clearRedlock(ctx context.Context) error {
	if r.redlock == nil {
		return nil
	}
	pattern := env.GlobEscape(r.cfg.Prefix) + "*"
	for i, c := range r.redlock.Clients() {
		if r.downAtDial(i) {
			continue // what it holds expires within the TTL; waiting for it would not end
		}
		err := retry(ctx, func() error {
			iter := c.Scan(ctx, 0, pattern, batch).Iterator()
			var keys []string
			for iter.Next(ctx) {
				keys = append(keys, iter.Val())
			}
			if err := iter.Err(); err != nil {
				return err
			}
			for chunk := range slices.Chunk(keys, batch) {
				if err := c.Del(ctx, chunk...).Err(); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("loadtest: delete the keys under %s on the Redlock node %s (they expire within the TTL): %w",
				r.cfg.Prefix, r.redlock.Addrs()[i], err)
		}
	}
	return nil
}
