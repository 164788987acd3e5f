package env

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// On a Redis Cluster each key lives in one of 16384 slots, and each slot
// on one master. A command whose keys lie in several slots is refused with
// CROSSSLOT, and a keyless command (SCAN, INFO) reaches one node only. What
// follows does for a cluster what one command does on a single server.

// clusterNotOK is a node that answered but does not say cluster_state:ok.
type clusterNotOK struct{ addr, state string }

func (e *clusterNotOK) Error() string {
	return "cluster_state:" + e.state + " on " + e.addr
}

// clusterOK checks that every node of the cluster, masters and replicas,
// answers and says cluster_state:ok. A cluster whose map is empty (no
// slot assigned yet) is asked through a seed.
func clusterOK(ctx context.Context, rdb *redis.ClusterClient, opt *redis.UniversalOptions) error {
	var mu sync.Mutex
	var errs []error
	visited := 0
	check := func(ctx context.Context, node redis.Cmdable, addr string) {
		info, err := node.ClusterInfo(ctx).Result()
		if err == nil {
			if state := InfoField(info, "cluster_state"); state != "ok" {
				err = &clusterNotOK{addr, state}
			}
		} else {
			err = fmt.Errorf("node %s: %w", addr, err)
		}
		mu.Lock()
		defer mu.Unlock()
		visited++
		if err != nil {
			errs = append(errs, err)
		}
	}
	err := rdb.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
		check(ctx, node, node.Options().Addr)
		return nil
	})
	if err != nil {
		return err
	}
	if visited == 0 { // no slot map yet: ask the first seed
		seed := redis.NewClient(opt.Simple())
		check(ctx, seed, opt.Addrs[0])
		seed.Close()
	}
	if len(errs) == 0 {
		return nil
	}
	// The same error every run, whichever node answered first.
	return slices.MinFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
}

// followFailover is a cluster client's hook that makes it read the slot
// map again after a command fails for a reason the map may explain: no
// reply at all (a dead or frozen master), or a failover under way.
// go-redis re-reads it by itself only on MOVED and READONLY, and it runs
// one reload at a time, however many commands ask.
type followFailover struct{ c *redis.ClusterClient }

func (followFailover) DialHook(next redis.DialHook) redis.DialHook { return next }

func (f followFailover) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		f.after(err)
		return err
	}
}

func (f followFailover) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		f.after(err)
		return err
	}
}

func (f followFailover) after(err error) {
	if err == nil || errors.Is(err, context.Canceled) {
		return
	}
	var reply redis.Error // redis.Nil too: an answer
	if errors.As(err, &reply) && !SlotMoving(err) {
		return
	}
	f.c.ReloadState(context.Background())
}

// SlotMoving reports whether err is a cluster's reply while a slot changes
// hands (CLUSTERDOWN, TRYAGAIN, MASTERDOWN, MOVED): the command did not
// run, and sent again a moment later it may.
func SlotMoving(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	for _, p := range []string{"CLUSTERDOWN ", "TRYAGAIN ", "MASTERDOWN ", "MOVED "} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// InfoField returns the value of name in INFO or CLUSTER INFO text, ""
// when it has none.
func InfoField(info, name string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// ForEachMaster calls fn with each master of a cluster, one after the
// other, or once with rdb itself for a single server. Use it for what a
// keyless command must see on every node: SCAN, INFO.
func ForEachMaster(ctx context.Context, rdb redis.UniversalClient, fn func(ctx context.Context, node redis.Cmdable) error) error {
	c, ok := rdb.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, rdb)
	}
	var masters []*redis.Client
	var mu sync.Mutex
	err := c.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
		mu.Lock()
		masters = append(masters, node)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(masters, func(a, b *redis.Client) int { return strings.Compare(a.Options().Addr, b.Options().Addr) })
	for _, m := range masters {
		if err := fn(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// GlobEscape escapes the characters that SCAN MATCH (and KEYS) would read
// as a pattern.
func GlobEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`, `]`, `\]`).Replace(s)
}

// OptionsOf returns the settings of a client that Connect (or
// redis.NewUniversalClient) made, as far as they describe where it talks:
// the addresses (a cluster's seeds), the database, TLS and the password.
// For the commands a program prints, never for making a client.
func OptionsOf(rdb redis.UniversalClient) *redis.UniversalOptions {
	switch c := rdb.(type) {
	case *redis.Client:
		o := c.Options()
		return &redis.UniversalOptions{Addrs: []string{o.Addr}, DB: o.DB, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig}
	case *redis.ClusterClient:
		o := c.Options()
		return &redis.UniversalOptions{Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig, IsClusterMode: true}
	}
	return &redis.UniversalOptions{Addrs: []string{DefaultRedisAddr}}
}
