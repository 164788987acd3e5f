// Package redlock is Redlock, the lock of Redis's distributed-lock page,
// taken with go-redsync's mutex over independent Redis nodes, for the load
// test and the drill.
//
// Redlock sets the same key with a random value on every node at once and
// holds the lock when a majority said yes, well within the TTL. It
// survives the loss of a minority of nodes; not a node that forgets a key
// it granted while a second client can reach a majority that includes
// it, nor a holder that stalls past its TTL. It hands out no fencing
// token. Errors name how many nodes answered, so that "the nodes are
// down" and "the lock is taken" never look alike.
package redlock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/lock"
)

var (
	// ErrNodesDown is returned by Dial when fewer than a majority of the
	// nodes answer.
	ErrNodesDown = errors.New("redlock: nodes down")
	// ErrNoQuorum is returned when fewer than a majority of the nodes
	// answered a call: the lock cannot be taken, kept or given back.
	ErrNoQuorum = errors.New("redlock: fewer than a majority of the nodes answered")
)

// Nodes are the independent Redis nodes of one Redlock, each with its own
// client. It is safe for concurrent use.
type Nodes struct {
	addrs   []string
	clients []redis.UniversalClient
	rs      *redsync.Redsync
	down    []string // the nodes that did not answer Dial
}

// NewNodes returns the nodes behind clients, whose addresses addrs
// name (for messages). It takes no ownership: Close closes the clients.
func NewNodes(addrs []string, clients ...redis.UniversalClient) *Nodes {
	pools := make([]redsyncredis.Pool, len(clients))
	for i, c := range clients {
		pools[i] = goredis.NewPool(c)
	}
	return &Nodes{addrs: addrs, clients: clients, rs: redsync.New(pools...)}
}

// Dial opens a client to each of addrs (configure, when not nil, may
// change its options) and asks every node for INFO server within a second.
// When a majority answer it returns the nodes, and Degraded says which do
// not; when fewer do, an error wrapping ErrNodesDown that says how to
// start them. Two nodes that answer with one run_id are one server behind
// two addresses: env.ErrSameRedlockNode.
func Dial(ctx context.Context, addrs []string, configure func(*redis.Options)) (*Nodes, error) {
	clients := make([]redis.UniversalClient, len(addrs))
	for i, a := range addrs {
		opt := &redis.Options{Addr: a, DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
			// A SET NX retried after a timeout may have landed the first
			// time: the lock's count of grants must not be muddled.
			MaxRetries: -1,
			// A node that refuses a connection is down, and the majority
			// decides without it: go-redis's default of 5 dials 100 ms
			// apart would hold every lock call on it for 400 ms.
			DialerRetries: 1}
		if configure != nil {
			configure(opt)
		}
		clients[i] = redis.NewClient(opt)
	}
	n := NewNodes(addrs, clients...)
	ids := n.runIDs(ctx)
	byID := map[string]string{}
	for i, id := range ids {
		switch first, seen := byID[id]; {
		case id == "":
			n.down = append(n.down, addrs[i])
		case seen:
			n.Close()
			return nil, fmt.Errorf("%w: %s and %s are one Redis server (the same run_id): point REDLOCK_ADDRS at %d servers of their own",
				env.ErrSameRedlockNode, first, addrs[i], len(addrs))
		default:
			byID[id] = addrs[i]
		}
	}
	if answer := len(addrs) - len(n.down); answer < n.Quorum() {
		n.Close()
		return nil, fmt.Errorf("%w: %d of %d answer (%s), and Redlock needs a majority, %d: start them with `make redlock-up`, or point REDLOCK_ADDRS at running ones",
			ErrNodesDown, answer, len(addrs), n.downNot(), n.Quorum())
	}
	return n, nil
}

// Degraded says, in one line, which nodes did not answer Dial while a
// majority did; "" when every node answered.
func (n *Nodes) Degraded() string {
	if len(n.down) == 0 {
		return ""
	}
	answer := len(n.addrs) - len(n.down)
	spare := "one more down stops it"
	if more := answer - n.Quorum(); more > 0 {
		spare = fmt.Sprintf("it can lose %d more", more)
	}
	return fmt.Sprintf("%d of %d Redlock nodes answer (%s): a majority, so Redlock runs; %s", answer, len(n.addrs), n.downNot(), spare)
}

// downNot names the nodes down at Dial: "a, b do not".
func (n *Nodes) downNot() string {
	if len(n.down) == 1 {
		return n.down[0] + " does not"
	}
	return strings.Join(n.down, ", ") + " do not"
}

// DownAtDial returns the addresses of the nodes that did not answer Dial.
func (n *Nodes) DownAtDial() []string { return n.down }

// runIDs asks every node for its run_id (INFO server) within a second:
// "" for a node that does not answer.
func (n *Nodes) runIDs(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	ids := make([]string, len(n.clients))
	var wg sync.WaitGroup
	for i, c := range n.clients {
		wg.Go(func() {
			info, err := c.Info(ctx, "server").Result()
			if err != nil {
				return
			}
			for line := range strings.Lines(info) {
				if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
					ids[i] = id
				}
			}
			if ids[i] == "" {
				ids[i] = "unknown " + n.addrs[i] // answers, but names no run_id
			}
		})
	}
	wg.Wait()
	return ids
}

// Clients returns the nodes' clients, in the order of their addresses.
func (n *Nodes) Clients() []redis.UniversalClient { return n.clients }

// Addrs returns the nodes' addresses.
func (n *Nodes) Addrs() []string { return n.addrs }

// Quorum is how many nodes must agree: a majority.
func (n *Nodes) Quorum() int { return len(n.clients)/2 + 1 }

// Close closes the nodes' clients.
func (n *Nodes) Close() {
	for _, c := range n.clients {
		c.Close()
	}
}

// Lock is a Redlock held on a majority of the nodes.
type Lock struct {
	m     *redsync.Mutex
	nodes *Nodes
	// Attempts counts the tries Acquire made, the one that won included.
	Attempts int
}

// Acquire takes the lock named key for ttl, trying again after a random
// wait of 5 to 15 ms (as lock.Acquire does) while a majority of the nodes
// answer that another holder has it, until ctx ends. It returns an error
// wrapping ErrNoQuorum as soon as one attempt reaches fewer than a
// majority: no amount of waiting fixes a node that is down.
func (n *Nodes) Acquire(ctx context.Context, key string, ttl time.Duration) (*Lock, error) {
	if err := lock.CheckTTL(ttl); err != nil {
		return nil, err
	}
	// A single try per call: this loop, not redsync's, decides what a
	// failed try means. Each node gets a quarter of the TTL to answer
	// (redsync's twentieth, 25 ms of 500 ms, a busy live node misses).
	m := n.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(1), redsync.WithTimeoutFactor(0.25))
	var retry lock.Jitter
	for attempt := 1; ; attempt++ {
		err := m.TryLockContext(ctx)
		if err == nil {
			return &Lock{m: m, nodes: n, Attempts: attempt}, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("redlock: lock %s: gave up after %d attempts: %w", key, attempt, context.Cause(ctx))
		}
		if err := n.quorumLost("lock", key, err); err != nil {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("redlock: lock %s: gave up after %d attempts: %w", key, attempt, context.Cause(ctx))
		case <-time.After(retry.NextBackoff()):
		}
	}
}

// quorumLost returns an error wrapping ErrNoQuorum when err, a failure of
// redsync over every node, says that fewer than a majority answered.
func (n *Nodes) quorumLost(op, key string, err error) error {
	var failed []*redsync.RedisError
	walkErrors(err, func(e error) {
		if re, ok := e.(*redsync.RedisError); ok {
			failed = append(failed, re)
		}
	})
	answered := len(n.clients) - len(failed)
	if answered >= n.Quorum() {
		return nil
	}
	first := failed[0]
	return fmt.Errorf("%w: %s %s: %d of %d nodes answered, %d needed (%s: %v)",
		ErrNoQuorum, op, key, answered, len(n.clients), n.Quorum(), n.addrs[first.Node], first.Err)
}

// walkErrors calls f on err and every error it wraps, through errors.Join too.
func walkErrors(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walkErrors(e, f)
		}
	case interface{ Unwrap() error }:
		walkErrors(u.Unwrap(), f)
	}
}

// Token is the random value the lock set on the nodes: it names the
// holder. Never print it whole.
func (l *Lock) Token() string { return l.m.Value() }

// Extend gives the lock its full TTL again on every node that still holds
// it, for lock.KeepAlive: lock.ErrNotHeld when fewer than a majority still
// hold it, ErrNoQuorum when fewer answered.
func (l *Lock) Extend(ctx context.Context) error {
	ok, err := l.m.ExtendContext(ctx)
	return l.failed("extend", ok, err)
}

// Release deletes the lock on every node that holds it with its token,
// and fails like Extend. A nil Lock has nothing to release.
func (l *Lock) Release(ctx context.Context) error {
	if l == nil {
		return nil
	}
	ok, err := l.m.UnlockContext(ctx)
	return l.failed("release", ok, err)
}

func (l *Lock) failed(op string, ok bool, err error) error {
	if ok {
		return nil
	}
	if lost := l.nodes.quorumLost(op, l.m.Name(), err); lost != nil {
		return lost
	}
	return fmt.Errorf("redlock: %s %s: %w", op, l.m.Name(), lock.ErrNotHeld)
}
