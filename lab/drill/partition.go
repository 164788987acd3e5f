//go:build unix

package drill

// The partition nemesis: a Redis primary and two replicas, a Sentinel
// beside each, and the spenders spread over three hosts, each a network
// namespace of the drill's own (see Net). The partition takes the LAN link
// of host 0 down: the primary, one Sentinel and spender 0 are cut off from
// the majority while every process keeps running. The majority's two
// Sentinels promote a replica and the spenders there follow it; spender 0
// is still granted locks by the old primary, which nobody told. When the
// link comes back the Sentinels turn the old primary into a replica of the
// new one, and what it accepted in the partition is gone.
//
// Redlock runs on three independent nodes, one per host: split 1 | 2, the
// isolated spender reaches one node, never a majority.

import (
	"context"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/netns"
)

// The partition nemeses.
const (
	// Partition cuts the primary, a Sentinel and a spender off.
	Partition = "partition"
	// PartitionMinReplicas is Partition with min-replicas-to-write 1 on
	// every node: a primary that has heard from no replica for
	// MinReplicasMaxLag refuses writes (NOREPLICAS).
	PartitionMinReplicas = "partition-min-replicas"
)

// MinReplicasMaxLag is min-replicas-max-lag in PartitionMinReplicas, in
// whole seconds as Redis counts it.
const MinReplicasMaxLag = 1

// The partition's bounds (see Config.Partition): how long it lasts once
// the majority's Sentinels have promoted a replica (about 3 s after the
// cut, promoteBound at most). Redlock's lasts redlockCut more. Where the
// lesson has two holders meet, it lasts until they have, at most
// strikeBound more (see mustStrike).
const (
	DefaultPartition = 3 * time.Second
	MinPartition     = time.Second
	MaxPartition     = 20 * time.Second
	promoteBound     = 15 * time.Second
	redlockCut       = 3 * time.Second
	strikeBound      = 15 * time.Second
)

// sentinelDownAfter is how long the majority's Sentinels wait for the
// silent primary before they agree it is down.
const sentinelDownAfter = time.Second

// rejoinBound is how long the drill waits, after the heal, for the
// Sentinels to turn the old primary into a replica: they wait 8 s from
// their last sight of it as a down master before they do.
const rejoinBound = 30 * time.Second

// IsPartition reports whether a nemesis is one of the partition nemeses,
// which need network namespaces (netns.CanPartition).
func IsPartition(nemesis string) bool { return nemesis == Partition || nemesis == PartitionMinReplicas }

// partition is what the nemesis saw, for the report once the spenders
// have stopped.
type partition struct {
	cut, promoted, healed int64  // Unix ns
	old, new              string // the primaries' LAN addresses ("" for Redlock)
	probe                 string // what became of the drill's write to the old primary
	rejoined              time.Duration
}

// startPartition makes the network and starts the servers in it: a
// redis-server in each host (the primary in host 0, for Sentinel) and,
// but for Redlock, a Sentinel beside each.
func (r *runner) startPartition(ctx context.Context) error {
	pg, err := netns.PostgresAddr(env.DatabaseURL())
	if err != nil {
		return err
	}
	var left string
	if r.net, left, err = netns.MakeNet(r.c.Prefix, pg); err != nil {
		return err
	}
	if left != "" && r.c.Say != nil {
		r.c.Say(left)
	}
	var replicas, sentinels []string
	for i := range netns.Hosts {
		var args []string
		if i > 0 && !isRedlock(r.c.Strategy) {
			args = []string{"--replicaof", r.net.LAN(0), "6379"}
		}
		if r.c.Nemesis == PartitionMinReplicas {
			args = append(args, "--min-replicas-to-write", "1", "--min-replicas-max-lag", strconv.Itoa(MinReplicasMaxLag))
		}
		s, err := r.net.StartRedis(ctx, r.procs, r.c.Dir, i, 6379, args...)
		if err != nil {
			return err
		}
		r.hostRedis, r.sc.Nodes = append(r.hostRedis, s), append(r.sc.Nodes, s.Addr)
		if i > 0 {
			replicas = append(replicas, s.Ctl)
		}
	}
	if isRedlock(r.c.Strategy) {
		return nil
	}
	r.sc.Nodes = nil
	if err := launch.AwaitInSync(ctx, replicas...); err != nil {
		return err
	}
	for i := range netns.Hosts {
		s, err := r.net.StartSentinel(ctx, r.procs, r.c.Dir, i, 26379, masterName, 6379, sentinelDownAfter)
		if err != nil {
			return err
		}
		r.hostSentinels, sentinels = append(r.hostSentinels, s), append(sentinels, s.Ctl)
	}
	return launch.AwaitSentinels(ctx, masterName, sentinels, netns.Hosts-1)
}

// partition is the nemesis: cut host 0 off, let the majority promote,
// strike a holder of the old primary's lock while the new primary grants
// the same wallet, heal, and wait for the old primary to rejoin.
func (r *runner) partition(ctx context.Context) (int, string, error) {
	p := &partition{}
	r.part = p
	sentinel := !isRedlock(r.c.Strategy)
	if sentinel {
		p.old = r.hostRedis[0].Addr
	}
	if err := r.net.Cut(0); err != nil {
		return 0, "", err
	}
	p.cut = time.Now().UnixNano()
	end := time.Unix(0, p.cut).Add(redlockCut + r.c.Partition)
	promoted := -1
	if sentinel {
		poll(ctx, promoteBound, func() bool { promoted = r.promotedHost(ctx); return promoted > 0 })
		if promoted < 0 {
			r.net.Heal(0)
			if ctx.Err() != nil {
				return 1, "", ctx.Err()
			}
			return 1, "", fmt.Errorf("drill: the majority's sentinels promoted no replica within %v of the cut", promoteBound)
		}
		p.promoted, p.new = time.Now().UnixNano(), r.hostRedis[promoted].Addr
		end = time.Unix(0, p.promoted).Add(r.c.Partition)
	}
	// The lesson's two holders must meet, however slow the machine: where
	// the lesson says they do, the partition lasts until the strike has
	// landed, for at most strikeBound more. Its length is reported.
	giveUp := end
	if r.mustStrike() {
		giveUp = end.Add(strikeBound)
	}
	struck := r.strike(ctx, p, giveUp)
	sleep(ctx, time.Until(end))
	if sentinel {
		p.probe = r.probe(ctx, p)
	}
	if err := r.net.Heal(0); err != nil {
		return 1, "", err
	}
	p.healed = time.Now().UnixNano()
	if ctx.Err() != nil {
		return 1, "", ctx.Err()
	}
	held := time.Duration(p.healed - p.cut).Round(time.Millisecond)
	if !sentinel {
		return 1, fmt.Sprintf("cut host 0 (Redlock node 1, spender 0) off from hosts 1 and 2 for %v; %s", held, struck), nil
	}
	start := time.Now()
	if err := poll(ctx, rejoinBound, func() bool { return r.rejoined(ctx, promoted) }); err != nil {
		return 1, "", fmt.Errorf("drill: the old primary did not rejoin as a replica of the new one within %v of the heal: %w", rejoinBound, err)
	}
	p.rejoined = time.Since(start)
	p.probe += r.probeAfter(ctx, promoted)
	return 1, fmt.Sprintf("cut host 0 (primary, sentinel, spender 0) off for %v; the majority's sentinels promoted host %d's replica after %v; %s; healed, the old primary rejoined as a replica %v later",
		held, promoted, time.Duration(p.promoted-p.cut).Round(time.Millisecond), struck, p.rejoined.Round(100*time.Millisecond)), nil
}

// promotedHost returns the host whose replica a majority Sentinel names
// as the primary, -1 while none does.
func (r *runner) promotedHost(ctx context.Context) int {
	for _, s := range r.hostSentinels[1:] {
		primary := primaryOf(ctx, s.Ctl)
		for i, h := range r.hostRedis {
			if i > 0 && h.Addr == primary {
				return i
			}
		}
	}
	return -1
}

// mustStrike reports whether the lesson has the old primary's holder and
// a new one's meet in this run (partition, with a lock that a primary
// grants alone), so that the partition lasts until they have. Elsewhere
// the isolated side is granted nothing, or only for a lag after the cut:
// waiting would prove nothing more.
func (r *runner) mustStrike() bool {
	switch r.c.Strategy {
	case Lock, Fenced, Fair:
		return r.c.Nemesis == Partition
	}
	return false
}

// strike waits for a grant by the new side, then holds a spend of an
// isolated spender that the old primary granted until a spender of the
// majority has spent from the same wallet (at most half the TTL, while the
// held lock is still valid where it was granted): two holders at once. It
// tries until end, and says what it did.
func (r *runner) strike(ctx context.Context, p *partition, end time.Time) string {
	var first int64
	poll(ctx, time.Until(end), func() bool {
		first = r.firstGrant(func(s section) bool {
			if p.old == "" { // Redlock: a grant to the majority
				return s.proc%netns.Hosts != 0 && s.start > p.cut
			}
			return s.server == p.new && s.start > p.cut
		})
		return first != 0
	})
	if r.c.Strategy == Version {
		return "version takes no lock"
	}
	if first == 0 {
		return "the majority was granted no lock in the partition"
	}
	tries := 0
	for time.Now().Before(end) && ctx.Err() == nil {
		// After the cut only the isolated spender reaches the old
		// primary; for Redlock, only it holds no node of the majority.
		g, ok := r.grabRead(ctx, time.Until(end), func(e Event) bool {
			return e.Start > first && (e.Server == p.old && p.old != "" || p.old == "" && e.proc%netns.Hosts == 0)
		})
		if !ok {
			break
		}
		tries++
		// A spend whose lock the new primary granted (for Redlock, p.new
		// is "": any majority spender's).
		landed := r.spentSince(ctx, g, time.Now(), r.c.TTL/2, p.new) != 0
		r.ack(g)
		if landed {
			return fmt.Sprintf("spender %d, granted wallet %d by the old primary, wrote after a majority spender spent from it (try %d)", g.s.n, g.e.Wallet, tries)
		}
	}
	if tries == 0 {
		if p.old == "" {
			return "the isolated spender was granted no lock: one node of three is no majority"
		}
		return "the old primary granted no lock once the new one did"
	}
	return fmt.Sprintf("%d isolated holders struck, none overlapped a majority spend", tries)
}

// probeKey is the key the drill writes to the old primary just before
// the heal.
func (r *runner) probeKey() string { return r.c.Prefix + "partition-probe" }

// probe writes probeKey to the old primary over the uplink, as a client
// on the isolated side would, and says how it answered.
func (r *runner) probe(ctx context.Context, p *partition) string {
	c := newClient(r.hostRedis[0].Ctl)
	defer c.Close()
	err := c.Set(ctx, r.probeKey(), "written to the old primary in the partition", time.Minute).Err()
	switch {
	case err == nil:
		return "the old primary accepted the drill's write of " + r.probeKey() + " just before the heal"
	case strings.HasPrefix(err.Error(), "NOREPLICAS"):
		return "the old primary refused the drill's write just before the heal (NOREPLICAS)"
	}
	return "the drill's write to the old primary failed: " + err.Error()
}

// probeAfter says whether the probe survived the heal.
func (r *runner) probeAfter(ctx context.Context, promoted int) string {
	var where []string
	for _, i := range []int{0, promoted} {
		c := newClient(r.hostRedis[i].Ctl)
		n, err := c.Exists(ctx, r.probeKey()).Result()
		c.Del(ctx, r.probeKey())
		c.Close()
		if err == nil && n > 0 {
			where = append(where, fmt.Sprintf("host %d", i))
		}
	}
	if len(where) == 0 {
		return ", and after the heal it is on no node"
	}
	return ", and after the heal it is still on " + strings.Join(where, " and ")
}

// rejoined reports whether the old primary replicates from the new one.
func (r *runner) rejoined(ctx context.Context, promoted int) bool {
	c := newClient(r.hostRedis[0].Ctl)
	defer c.Close()
	info := c.Info(ctx, "replication").Val()
	host, _, _ := net.SplitHostPort(r.hostRedis[promoted].Addr)
	return strings.Contains(info, "role:slave") && strings.Contains(info, "master_host:"+host+"\r") &&
		strings.Contains(info, "master_link_status:up")
}

// Window is what the partition's report adds, measured from the spenders'
// reports of which server granted each lock (SpenderConfig.Identify).
type Window struct {
	Both         time.Duration // from the new primary's first grant to the old one's last
	OldFor       time.Duration // from the cut to the old primary's last grant
	DoubleGrants int           // pairs of an old and a new primary's holders on one wallet that overlapped
	OldGrants    int           // locks the old primary granted from the cut on
	NewGrants    int           // locks the new primary granted in the partition
	Lost         string        // what the healed primary lost
}

// window measures the partition from the sections. For Redlock the
// isolated spender's grants stand for the old primary's, the majority's
// for the new one's.
func (p *partition) window(sections []section) Window {
	var olds, news []section
	for _, s := range sections {
		if s.start < p.cut {
			continue
		}
		switch {
		case p.old == "" && s.start < p.healed && s.proc%netns.Hosts == 0:
			olds = append(olds, s)
		case p.old == "" && s.start < p.healed:
			news = append(news, s)
		case p.old != "" && s.server == p.old:
			olds = append(olds, s)
		case p.old != "" && s.server == p.new:
			news = append(news, s)
		}
	}
	w := Window{OldGrants: len(olds), NewGrants: len(news)}
	var lastOld int64
	for _, s := range olds {
		lastOld = max(lastOld, s.start)
	}
	if lastOld != 0 {
		w.OldFor = time.Duration(lastOld - p.cut)
	}
	if len(olds) > 0 && len(news) > 0 {
		firstNew := news[0].start
		for _, s := range news {
			firstNew = min(firstNew, s.start)
		}
		w.Both = max(0, time.Duration(lastOld-firstNew))
		for _, a := range olds {
			for _, b := range news {
				if a.wallet == b.wallet && a.start < b.end && b.start < a.end {
					w.DoubleGrants++
				}
			}
		}
	}
	w.Lost = p.lost(olds)
	return w
}

// lost says what the old primary granted in the partition and what
// became of it.
func (p *partition) lost(olds []section) string {
	if p.old == "" {
		return fmt.Sprintf("nothing to lose: Redlock's nodes replicate nothing; the isolated spender was granted %d locks", len(olds))
	}
	if len(olds) == 0 {
		return "the old primary granted no lock from the cut on; " + p.probe
	}
	wallets := map[int64]int{}
	var fences []int64
	for _, s := range olds {
		wallets[s.wallet]++
		if s.fence != 0 {
			fences = append(fences, s.fence)
		}
	}
	var per []string
	for _, id := range slices.Sorted(maps.Keys(wallets)) {
		per = append(per, fmt.Sprintf("wallet %d: %d", id, wallets[id]))
	}
	what := fmt.Sprintf("%d lock grants of the old primary from the cut on (%s)", len(olds), strings.Join(per, ", "))
	if len(fences) > 0 {
		what += fmt.Sprintf(", fences %d to %d", slices.Min(fences), slices.Max(fences))
	}
	return what + ", none replicated to the new primary, which the old one resynced from; " + p.probe
}

// serverOf names the server a spender's lock came from, as CLIENT INFO's
// laddr says.
func serverOf(ctx context.Context, rdb redis.UniversalClient) string {
	c, ok := rdb.(*redis.Client)
	if !ok {
		return ""
	}
	info, err := c.ClientInfo(ctx).Result()
	if err != nil {
		return ""
	}
	return info.LAddr
}
