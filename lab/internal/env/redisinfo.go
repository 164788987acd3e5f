package env

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// CommandStats is how many times a Redis server ran each command since it
// started (or since CONFIG RESETSTAT), from INFO commandstats. Commands that
// Lua scripts run count as well as the EVALSHA that ran them.
type CommandStats map[string]int64

// ReadCommandStats asks the server for INFO commandstats; on a cluster,
// every master, and sums their counters (INFO reaches one node only).
// Replicas are left out: what they replay is the masters' writes again.
func ReadCommandStats(ctx context.Context, rdb redis.UniversalClient) (CommandStats, error) {
	ictx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	calls := CommandStats{}
	err := ForEachMaster(ictx, rdb, func(ctx context.Context, node redis.Cmdable) error {
		info, err := node.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		for name, n := range ParseCommandStats(info) {
			calls[name] += n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("env: redis INFO commandstats: %w", err)
	}
	return calls, nil
}

// ParseCommandStats reads lines such as
// "cmdstat_get:calls=21,usec=35,usec_per_call=1.67,rejected_calls=0,failed_calls=0".
func ParseCommandStats(info string) CommandStats {
	calls := CommandStats{}
	for line := range strings.Lines(info) {
		name, fields, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, isStat := strings.CutPrefix(name, "cmdstat_")
		if !ok || !isStat {
			continue
		}
		for f := range strings.SplitSeq(fields, ",") {
			if v, ok := strings.CutPrefix(f, "calls="); ok {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					calls[name] = n
				}
			}
		}
	}
	return calls
}

// overhead are commands that say nothing about the work measured: the INFO
// that reads these stats, and what go-redis sends when it opens a
// connection.
var overhead = map[string]bool{"info": true, "hello": true, "client|setinfo": true, "auth": true, "select": true, "ping": true}

// Since sums the calls that happened between an earlier reading and this
// one, leaving out the overhead commands. The counters are server-wide: any
// other client of the same Redis (a parallel test, another program) adds
// its own, so this is an upper bound, not an exact count. It returns -1
// when a counter went down (someone ran CONFIG RESETSTAT or the server
// restarted), as the difference then means nothing.
func (s CommandStats) Since(before CommandStats) int64 {
	var sum int64
	for name, n := range s {
		if overhead[name] {
			continue
		}
		d := n - before[name]
		if d < 0 {
			return -1
		}
		sum += d
	}
	return sum
}
