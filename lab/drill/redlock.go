//go:build unix

package drill

// Redlock in the drill: three redis-server nodes of the drill's own, no
// persistence, and the fence redlock-fenced takes from PostgreSQL.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FenceSequence is the PostgreSQL sequence redlock-fenced takes its fences
// from. Redlock hands out no number that grows with each grant (a node
// that restarts empty would count again from 1), so the fence comes from
// the database that checks it: a sequence never goes back, not across a
// Redis restart, not across a double grant.
const FenceSequence = "walletlock_redlock_fence"

// CreateFenceSequence creates FenceSequence unless it exists. Two drills
// may create it at once: the loser finds it there.
func CreateFenceSequence(ctx context.Context, pool *pgxpool.Pool) error {
	_, err := pool.Exec(ctx, "CREATE SEQUENCE IF NOT EXISTS "+FenceSequence)
	if err != nil {
		var exists bool
		if pool.QueryRow(ctx, "SELECT to_regclass($1) IS NOT NULL", FenceSequence).Scan(&exists) == nil && exists {
			return nil
		}
		return fmt.Errorf("drill: create the sequence %s: %w", FenceSequence, err)
	}
	return nil
}

// NextFence takes the next number of FenceSequence.
func NextFence(ctx context.Context, pool *pgxpool.Pool) (int64, error) {
	var n int64
	if err := pool.QueryRow(ctx, "SELECT nextval($1)", FenceSequence).Scan(&n); err != nil {
		return 0, fmt.Errorf("drill: take a fence from %s: %w", FenceSequence, err)
	}
	return n, nil
}

// Applies reports whether a nemesis means anything to a strategy, and
// why not. A failover, by Sentinel or in a cluster, promotes a replica;
// Redlock's nodes are independent masters with none.
func Applies(nemesis, strategy string) (bool, string) {
	if (nemesis == Failover || nemesis == ClusterFailover) && isRedlock(strategy) {
		return false, "Redlock's nodes are independent masters with no replica to promote"
	}
	if nemesis == PartitionMinReplicas && isRedlock(strategy) {
		return false, "Redlock's nodes have no replicas to wait for"
	}
	return true, ""
}

// restartRedlock is the restart nemesis against Redlock, timed so that
// a node that forgets a lock decides who holds it:
//
//  1. one node goes down (SIGKILL); the spenders go on with the two left;
//  2. holder A takes a wallet's lock on those two and reads the balance;
//  3. the dead node comes back, empty, and one of A's two nodes restarts
//     empty: A's lock is left on one node;
//  4. another spender wins the two empty nodes, a majority, while A
//     still holds; A writes when it is let go.
//
// Redlock's answer to this is a restart delayed by at least the TTL; the
// drill restarts at once, as a supervisor would.
func (r *runner) restartRedlock(ctx context.Context) (int, string, error) {
	perm := r.rng.Perm(len(r.nodes))
	down, again := r.nodes[perm[0]], r.nodes[perm[1]]
	if !down.Proc().Kill(3 * time.Second) {
		return 0, "", fmt.Errorf("drill: the Redlock node %s did not die", down.Addr)
	}
	g, ok := r.grabRead(ctx, 5*time.Second, nil)
	if !ok {
		err := errors.Join(ctx.Err(), down.Start(ctx))
		return 1, "no spend came by while a node was down", err
	}
	struck := time.Now()
	err := down.Start(ctx)
	if err == nil {
		err = again.Restart(ctx)
	}
	var second int64
	if err == nil {
		second = r.spentSince(ctx, g, struck, 3*time.Second+2*r.c.TTL, "")
	}
	r.ack(g)
	if err != nil {
		return 2, "", err
	}
	what := "no other spender took the wallet"
	if second != 0 {
		after := time.Duration(second - g.e.Start)
		within := "inside"
		if after >= r.c.TTL {
			within = "past"
		}
		what = fmt.Sprintf("another spender won a majority %v after spender %d's grant, %s its %v TTL",
			after.Round(time.Millisecond), g.s.n, within, r.c.TTL)
	}
	return 2, fmt.Sprintf("killed Redlock node %d; spender %d took wallet %d on the other two; node %d came back empty and node %d restarted empty; %s",
		perm[0]+1, g.s.n, g.e.Wallet, perm[0]+1, perm[1]+1, what), nil
}
