//go:build unix

package drill

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/netns"
	"example.com/walletlock/lab/internal/wire"
)

// Nemeses, as -nemesis names them, in the order of the report.
const (
	None     = "none"     // the control
	Pause    = "pause"    // SIGSTOP a holder between its read and its write
	Crash    = "crash"    // SIGKILL a holder, start another spender
	Restart  = "restart"  // SIGKILL the Redis primary, start it again empty (Redlock: see restartRedlock)
	Failover = "failover" // cut the replica off, kill the primary, let Sentinel promote the replica
	// ClusterFailover is Failover on a Redis Cluster: cut the replicas off,
	// kill the master of the wallet's slot, let the cluster promote its
	// replica.
	ClusterFailover = "cluster-failover"
)

// Nemeses lists them in the order of the report (the partitions: see
// partition.go).
var Nemeses = []string{None, Pause, Crash, Restart, Failover, ClusterFailover, Partition, PartitionMinReplicas}

// Config is one run: one nemesis against one strategy with one seed.
type Config struct {
	Nemesis, Strategy string
	Seed              int64

	Exe     string        // the binary to start as a spender (see SpenderRole)
	Procs   int           // spender processes
	Conc    int           // concurrent spends in each
	First   int64         // wallet ids First .. First+Wallets-1, owned by Store
	Wallets int           //
	Initial int64         // starting balance of each wallet
	Amount  int64         // each spend
	TTL     time.Duration // of every lease
	Work    time.Duration // between the read and the write
	Prefix  string        // of the lock keys in the drill's own Redis
	Store   *ledger.Store // the run's (ledger.Open with Prefix): Run resets the wallets
	Dir     string        // for the sentinels' files

	Partition time.Duration // how long a partition lasts once a replica is promoted (see DefaultPartition)
	Say       func(string)  // prints a line on stderr; may be nil
}

// Result is what one run measured.
type Result struct {
	Nemesis      string `json:"nemesis"`
	Strategy     string `json:"strategy"`
	Seed         int64  `json:"seed"`
	OK           bool   `json:"ok"`
	MoneyOff     int64  `json:"money_off"`     // summed over the wallets: how far each balance is from any the reports allow
	DoubleGrants int    `json:"double_grants"` // pairs of critical sections on one wallet that overlapped
	Unknown      int    `json:"unknown"`       // spends whose outcome no report settled
	Faults       int    `json:"faults"`        // faults injected
	Check        string `json:"check"`         // the check line over all wallets
	Note         string `json:"note"`          // what the nemesis did

	// The partition nemeses add (see Window).
	WindowMS           *int64 `json:"window_ms,omitempty"`            // how long two primaries granted locks at once
	WindowDoubleGrants int    `json:"window_double_grants,omitempty"` // of DoubleGrants, an old primary's holder with a new one's
	OldPrimaryGrants   int    `json:"old_primary_grants,omitempty"`   // locks the old primary granted from the cut on
	OldPrimaryMS       *int64 `json:"old_primary_ms,omitempty"`       // from the cut to the old primary's last grant
	Lost               string `json:"lost,omitempty"`                 // what the healed primary lost

	HistoryVerdict // its history's verdict (history.go)
}

// runner is the state of one run.
type runner struct {
	c     Config
	procs *launch.Group
	rng   *rand.Rand
	sc    SpenderConfig // where the spenders find the servers: startSpender adds the rest

	// The servers the spenders lock on. masters[i] has replicas[i], whose
	// replication link runs through proxies[i] (Sentinel's primary is
	// masters[0]); for a cluster, direct maps the address a master
	// announces, its proxy's, back to the master's own.
	masters, replicas []*launch.Redis
	nodes             []*launch.Redis // Redlock's, instead of a primary
	servers           []*launch.Redis // every one, to stop
	proxies           []*wire.Proxy
	direct            map[string]string

	// The partition's network, hosts and what its nemesis saw.
	net                      *netns.Net
	hostRedis, hostSentinels []*netns.Server
	part                     *partition

	mu       sync.Mutex
	spenders []*spenderProc
	accepted map[int64]int
	unknown  map[int64]int
	open     map[[2]int64]Event // read, not yet done: by spender and request
	sections []section
	grab     func(Event) bool // set while the nemesis waits for a read
	grabbed  chan grabbed
	rec      *history.Recorder // the run's history (history.go)
}

type section struct {
	wallet, start, end int64
	holder             string
	proc               int // the spender process
	accepted           bool
	server             string // that granted the lock, when the spender says (Identify)
	fence              int64
}

type grabbed struct {
	e Event
	s *spenderProc
}

type spenderProc struct {
	n     int
	proc  *launch.Program
	wmu   sync.Mutex
	err   launch.Log    // its stderr
	ended chan struct{} // stdout read to the end
}

// Run runs one drill in three phases: it starts the servers and resets
// the wallets, runs the spenders under the nemesis, and judges what they
// did. procs holds every process it starts; Run stops them before it
// returns.
func Run(ctx context.Context, procs *launch.Group, c Config) (Result, error) {
	res := Result{Nemesis: c.Nemesis, Strategy: c.Strategy, Seed: c.Seed}
	if ok, why := Applies(c.Nemesis, c.Strategy); !ok {
		return res, fmt.Errorf("drill: %s does not apply to %s: %s", c.Nemesis, c.Strategy, why)
	}
	r := &runner{c: c, procs: procs, rng: rand.New(rand.NewPCG(uint64(c.Seed), 0x6472696c6c)),
		accepted: map[int64]int{}, unknown: map[int64]int{}, open: map[[2]int64]Event{}}
	defer r.stopServers()
	if err := r.startServers(ctx); err != nil {
		return res, err
	}
	if err := c.Store.ResetRange(ctx, c.First, c.Wallets, c.Initial, nil); err != nil {
		return res, err
	}
	if err := r.spend(ctx, &res); err != nil {
		return res, err
	}
	return res, r.judge(ctx, &res)
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// startServers starts the servers that the nemesis and the strategy
// need, and says in r.sc where the spenders find them.
func (r *runner) startServers(ctx context.Context) error {
	c := r.c
	switch {
	case IsPartition(c.Nemesis):
		return r.startPartition(ctx)
	case isRedlock(c.Strategy):
		for range 3 {
			s, err := r.procs.StartRedis(ctx, c.Dir)
			if err != nil {
				return err
			}
			r.nodes, r.servers, r.sc.Nodes = append(r.nodes, s), append(r.servers, s), append(r.sc.Nodes, s.Addr)
		}
		return nil
	case c.Nemesis == ClusterFailover:
		cl, err := r.procs.StartCluster(ctx, c.Dir, r.clusterSpec())
		r.masters, r.replicas = cl.Masters, slices.Concat(cl.Replicas...)
		r.servers, r.sc.Direct = slices.Concat(r.masters, r.replicas), r.direct
		for _, m := range r.masters {
			r.sc.Cluster = append(r.sc.Cluster, m.Addr)
		}
		return err
	}
	primary, err := r.procs.StartRedis(ctx, c.Dir)
	if err != nil {
		return err
	}
	r.masters, r.servers, r.sc.Redis = []*launch.Redis{primary}, []*launch.Redis{primary}, primary.Addr
	if c.Strategy != Wait && c.Nemesis != Failover {
		return nil
	}
	proxy, err := wire.ListenRaw("127.0.0.1:0", primary.Addr)
	if err != nil {
		return err
	}
	r.proxies = []*wire.Proxy{proxy}
	replica, err := r.procs.StartReplica(ctx, c.Dir, proxy.Addr())
	if err != nil {
		return err
	}
	r.replicas, r.servers = []*launch.Redis{replica}, append(r.servers, replica)
	if err := launch.AwaitInSync(ctx, replica.Addr); err != nil || c.Nemesis != Failover {
		return err
	}
	for range 3 {
		s, err := r.procs.StartSentinel(ctx, c.Dir, masterName, primary.Addr, 500*time.Millisecond)
		if err != nil {
			return err
		}
		r.servers, r.sc.Sentinels = append(r.servers, s), append(r.sc.Sentinels, s.Addr)
	}
	r.sc.Redis = ""
	// Each sentinel must know the replica and the other two before the
	// primary dies, or there is no quorum to promote anyone.
	return launch.AwaitSentinels(ctx, masterName, r.sc.Sentinels, 1)
}

func (r *runner) stopServers() {
	for _, s := range r.servers {
		s.Proc().Kill(3 * time.Second)
	}
	for _, s := range slices.Concat(r.hostRedis, r.hostSentinels) {
		s.Proc.Kill(3 * time.Second)
	}
	for _, p := range r.proxies {
		p.Close()
	}
	if r.net != nil {
		if err := r.net.Remove(); err != nil && r.c.Say != nil {
			r.c.Say(err.Error())
		}
	}
}

// poll calls ok every 50 ms until it says true, for at most d.
func poll(ctx context.Context, d time.Duration, ok func() bool) error {
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			return fmt.Errorf("gave up after %v", d)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		sleep(ctx, 50*time.Millisecond)
	}
	return nil
}

// spend starts the spenders and the history, strikes at a moment the
// seed picks, lets two TTLs of aftermath go by and stops the spenders.
func (r *runner) spend(ctx context.Context, res *Result) (err error) {
	r.startHistory()
	defer r.stopSpenders(ctx)
	for i := range r.c.Procs {
		if err := r.startSpender(i); err != nil {
			return err
		}
	}
	r.waitSpends(ctx, r.c.Procs, 10*time.Second)
	sleep(ctx, time.Duration(r.rng.Int64N(int64(2*r.c.TTL))))
	if res.Faults, res.Note, err = r.nemesis(ctx); err != nil {
		return err
	}
	sleep(ctx, 2*r.c.TTL)
	return ctx.Err()
}

func (r *runner) startSpender(n int) error {
	c := r.c
	sc := r.sc
	sc.Strategy, sc.Prefix, sc.First, sc.Wallets, sc.Amount = c.Strategy, c.Prefix, c.First, c.Wallets, c.Amount
	sc.TTL, sc.Work, sc.Conc, sc.Hold, sc.Seed = c.TTL, c.Work, c.Conc, c.Nemesis != None, uint64(c.Seed)<<16|uint64(n)
	if r.net != nil && !isRedlock(c.Strategy) { // the Sentinel beside the spender first
		sc.Sentinels = nil
		for i := range netns.Hosts {
			sc.Sentinels = append(sc.Sentinels, r.hostSentinels[(n+i)%netns.Hosts].Addr)
		}
		sc.Identify = true
	}
	js, _ := json.Marshal(sc)
	cmd := exec.Command(c.Exe)
	cmd.Env = append(os.Environ(), SpenderEnv+"="+string(js))
	if r.net != nil { // in host n % netns.Hosts, reaching PostgreSQL over the uplink
		db, err := r.net.DatabaseURL(env.DatabaseURL())
		if err != nil {
			return err
		}
		cmd = r.net.Command(n%netns.Hosts, c.Exe)
		cmd.Env = append(os.Environ(), SpenderEnv+"="+string(js), "DATABASE_URL="+db)
	}
	sp := &spenderProc{n: n, ended: make(chan struct{})}
	cmd.Stderr = &sp.err
	var err error
	if sp.proc, err = r.procs.StartProgram(fmt.Sprintf("spender %d", n), cmd); err != nil {
		return err
	}
	r.mu.Lock()
	r.spenders = append(r.spenders, sp)
	r.mu.Unlock()
	go r.read(sp, sp.proc.Stdout)
	return nil
}

// read takes in one spender's reports.
func (r *runner) read(sp *spenderProc, stdout io.ReadCloser) {
	defer close(sp.ended)
	defer stdout.Close()
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		var e Event
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		k := [2]int64{int64(sp.n), e.Req}
		e.proc = sp.n
		r.mu.Lock()
		switch e.Ev {
		case "read":
			r.open[k] = e
			if r.grab != nil && r.grab(e) {
				r.grab = nil
				r.grabbed <- grabbed{e, sp}
				r.mu.Unlock()
				continue
			}
		case "spend":
			delete(r.open, k)
			r.record(e)
		}
		r.mu.Unlock()
		if e.Ev == "read" {
			r.ack(grabbed{e, sp})
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A spend that was reading when the process ended may have written:
	// its outcome is unknown, and its critical section lasted until then.
	end := time.Now().UnixNano()
	for k, e := range r.open {
		if k[0] == int64(sp.n) {
			e.End, e.Read, e.Result, e.Outcome = end, nil, uint8(history.Unknown), Unknown
			r.record(e)
			delete(r.open, k)
		}
	}
}

// record takes in a spend that ended, with r.mu held.
func (r *runner) record(e Event) {
	r.spent(e.proc, e)
	switch e.Outcome {
	case Accepted:
		r.accepted[e.Wallet]++
	case Unknown:
		r.unknown[e.Wallet]++
	}
	if e.Start != 0 {
		r.sections = append(r.sections, section{e.Wallet, e.Start, e.End, e.Holder, e.proc, e.Outcome == Accepted, e.Server, e.Fence})
	}
}

// ack lets a held spend go on to its write.
func (r *runner) ack(g grabbed) {
	g.s.wmu.Lock()
	defer g.s.wmu.Unlock()
	fmt.Fprintf(g.s.proc.Stdin, "go %d\n", g.e.Req)
}

// grabRead hands the nemesis the next read that pass accepts, instead of
// letting it go on, or gives up after d.
func (r *runner) grabRead(ctx context.Context, d time.Duration, pass func(Event) bool) (grabbed, bool) {
	ch := make(chan grabbed, 1)
	r.mu.Lock()
	r.grab, r.grabbed = func(e Event) bool { return e.Start != 0 && (pass == nil || pass(e)) }, ch
	r.mu.Unlock()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case g := <-ch:
		return g, true
	case <-ctx.Done():
	case <-t.C:
	}
	r.mu.Lock()
	r.grab = nil
	r.mu.Unlock()
	select { // grabbed just before the give-up
	case g := <-ch:
		return g, true
	default:
		return grabbed{}, false
	}
}

// waitSpends waits until n spends have been reported, for at most d.
func (r *runner) waitSpends(ctx context.Context, n int, d time.Duration) {
	poll(ctx, d, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.sections) >= n
	})
}

// spentSince waits, for at most d, until another spender process than
// g's has made an accepted spend on g's wallet that began after t, with
// a lock that server granted ("": any), and returns when that spend
// began; 0 when there was none.
func (r *runner) spentSince(ctx context.Context, g grabbed, t time.Time, d time.Duration, server string) int64 {
	var first int64
	poll(ctx, d, func() bool {
		first = r.firstGrant(func(s section) bool {
			return s.wallet == g.e.Wallet && s.start > t.UnixNano() && s.proc != g.s.n && s.accepted && (server == "" || s.server == server)
		})
		return first != 0
	})
	return first
}

// firstGrant returns when the first critical section that ok accepts
// began, 0 when there is none.
func (r *runner) firstGrant(ok func(section) bool) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first int64
	for _, s := range r.sections {
		if ok(s) && (first == 0 || s.start < first) {
			first = s.start
		}
	}
	return first
}

// stopSpenders closes their stdin, which stops them after the spend in
// hand, and kills those that have not exited within a few seconds.
func (r *runner) stopSpenders(ctx context.Context) {
	r.mu.Lock()
	list := append([]*spenderProc(nil), r.spenders...)
	r.mu.Unlock()
	for _, sp := range list {
		sp.proc.Resume() // a paused spender could not stop
		sp.wmu.Lock()
		sp.proc.Stdin.Close()
		sp.wmu.Unlock()
	}
	deadline := time.After(5 * time.Second)
	for _, sp := range list {
		select {
		case <-sp.proc.Exited():
		case <-deadline:
		case <-ctx.Done():
		}
		sp.proc.Kill(3 * time.Second)
		<-sp.ended
	}
}

// judge reads the balances back, ends the history with them and checks
// it (within history.DefaultLimits or until ctx ends), checks every
// wallet against the spenders' reports, and counts the double grants.
func (r *runner) judge(ctx context.Context, res *Result) error {
	c := r.c
	balances, err := c.Store.Balances(ctx, c.First, c.Wallets)
	if err != nil {
		return err
	}
	for i, bal := range balances {
		r.rec.Read(c.First+int64(i), bal)
	}
	res.HistoryVerdict = HistoryVerdict{Verdict: r.rec.Check(ctx, history.DefaultLimits), rec: r.rec}
	r.mu.Lock()
	defer r.mu.Unlock()
	accepted, unknown := make([]int64, len(balances)), make([]int64, len(balances))
	for i := range balances {
		id := c.First + int64(i)
		accepted[i], unknown[i] = int64(r.accepted[id]), int64(r.unknown[id])
	}
	v, _, off, money := ledger.Judge(c.Initial, c.Amount, accepted, unknown, balances)
	res.OK, res.MoneyOff, res.Unknown = off == 0, money, v.Unknown
	res.Check = v.String()
	if c.Strategy == Version { // no lock, nothing granted
		return nil
	}
	res.DoubleGrants = overlaps(r.sections)
	if r.part != nil {
		w := r.part.window(r.sections)
		both, old := w.Both.Milliseconds(), w.OldFor.Milliseconds()
		res.WindowMS, res.OldPrimaryMS = &both, &old
		res.WindowDoubleGrants, res.OldPrimaryGrants, res.Lost = w.DoubleGrants, w.OldGrants, w.Lost
	}
	return nil
}

// overlaps counts the pairs of critical sections on one wallet, of two
// holders, that overlapped in time: the lock granted to a holder while
// another still believed it held it.
func overlaps(sections []section) int {
	s := append([]section(nil), sections...)
	slices.SortFunc(s, func(a, b section) int { return cmp.Or(cmp.Compare(a.wallet, b.wallet), cmp.Compare(a.start, b.start)) })
	n := 0
	for i := range s {
		for j := i + 1; j < len(s) && s[j].wallet == s[i].wallet && s[j].start < s[i].end; j++ {
			if s[j].holder != s[i].holder {
				n++
			}
		}
	}
	return n
}
