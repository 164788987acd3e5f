//go:build unix

package drill

// The spender role: the drill binary run again as a child, spending with
// one strategy and reporting every spend as a JSON line on stdout.

import (
	"bufio"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/internal/redlock"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/lock/fair"
	"example.com/walletlock/wallet"
)

// SpenderEnv names the environment variable that makes the drill binary
// (or a test binary that calls SpenderRole in TestMain) a spender; it holds
// the SpenderConfig as JSON.
const SpenderEnv = "WALLETLOCK_DRILL_SPENDER"

// Strategies, as -strategy names them.
const (
	Lock    = "lock"    // a Redis lease, then a plain read and write in PostgreSQL
	Wait    = "wait"    // the lease, then WAIT 1: give up unless a replica has it
	Fenced  = "fenced"  // AcquireFenced, and PostgreSQL checks the fence
	Version = "version" // no Redis: a version column in PostgreSQL
	Fair    = "fair"    // fair.Lock's lease, then the plain read and write
	Redlock = "redlock" // go-redsync's mutex on a majority of three nodes
	// RedlockFenced is Redlock with a fence checked by PostgreSQL, taken
	// from a sequence once the lock is held (see FenceSequence).
	RedlockFenced = "redlock-fenced"
)

// Strategies lists them in the order of the report.
var Strategies = []string{Lock, Wait, Fenced, Version, Fair, Redlock, RedlockFenced}

// isRedlock reports whether a strategy takes its lock on the drill's three
// Redlock nodes rather than on one Redis.
func isRedlock(strategy string) bool { return strategy == Redlock || strategy == RedlockFenced }

// SpenderConfig is what a spender process is told.
type SpenderConfig struct {
	Strategy  string            `json:"strategy"`
	Redis     string            `json:"redis,omitempty"`     // the primary, when there are no sentinels
	Nodes     []string          `json:"nodes,omitempty"`     // the Redlock nodes, for redlock and redlock-fenced
	Sentinels []string          `json:"sentinels,omitempty"` // follow the primary through these
	Cluster   []string          `json:"cluster,omitempty"`   // the seed nodes of a cluster
	Direct    map[string]string `json:"direct,omitempty"`    // a cluster master's announced address: the master's own
	Prefix    string            `json:"prefix"`              // of the lock keys
	First     int64             `json:"first"`               // wallet ids First .. First+Wallets-1
	Wallets   int               `json:"wallets"`
	Amount    int64             `json:"amount"`
	TTL       time.Duration     `json:"ttl"`
	Work      time.Duration     `json:"work"`
	Conc      int               `json:"conc"`               // concurrent spends in this process
	Hold      bool              `json:"hold"`               // after each read, wait for "go <req>" on stdin
	Identify  bool              `json:"identify,omitempty"` // report which server granted each lock (Event.Server)
	Seed      uint64            `json:"seed"`
}

// Event is one line a spender prints.
type Event struct {
	Ev      string `json:"ev"`  // "read": holding the lock, balance read; "spend": done
	Req     int64  `json:"req"` // numbers the spends of one process
	Wallet  int64  `json:"wallet"`
	Amount  int64  `json:"amount"`
	Outcome string `json:"outcome,omitempty"` // accepted, refused or unknown
	Holder  string `json:"holder,omitempty"`  // the first 12 hex digits of the SHA-1 of the lock token
	Fence   int64  `json:"fence,omitempty"`
	Start   int64  `json:"start,omitempty"` // Unix ns: the lock was granted (0: no critical section)
	End     int64  `json:"end,omitempty"`   // Unix ns: the write returned
	Why     string `json:"why,omitempty"`   // for a refusal or an unknown outcome
	// For the history: when the spend began, before the lock (Unix ns);
	// the balance it read; its history.Result (0: it gave up before it
	// touched the wallet).
	Call   int64  `json:"call,omitempty"`
	Read   *int64 `json:"read,omitempty"`
	Result uint8  `json:"result,omitempty"`
	Server string `json:"server,omitempty"` // with Identify: the server that granted the lock, as CLIENT INFO's laddr

	proc int // the spender process, set by the drill as it reads the line
}

// Outcomes.
const (
	Accepted = "accepted"
	Refused  = "refused"
	Unknown  = "unknown"
)

// SpenderRole reports whether this process was started as a spender.
func SpenderRole() (SpenderConfig, bool) {
	v, ok := os.LookupEnv(SpenderEnv)
	if !ok {
		return SpenderConfig{}, false
	}
	var c SpenderConfig
	if err := json.Unmarshal([]byte(v), &c); err != nil {
		c.Strategy = "" // RunSpender refuses it
	}
	return c, true
}

// RunSpender spends until stdin ends, then returns the exit code.
func RunSpender(c SpenderConfig, stdin io.Reader, stdout, stderr io.Writer) int {
	env.Quiet()
	if err := runSpender(c, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "drill spender:", err)
		return 1
	}
	return 0
}

type spender struct {
	c       SpenderConfig
	rdb     redis.UniversalClient
	fair    *fair.Lock
	redlock *redlock.Nodes // for redlock and redlock-fenced
	pool    *pgxpool.Pool  // redlock-fenced takes its fences from a sequence
	store   *ledger.Store

	out     sync.Mutex
	enc     *json.Encoder
	req     atomic.Int64
	stopped atomic.Bool

	mu    sync.Mutex
	holds map[int64]chan struct{}
}

func runSpender(c SpenderConfig, stdin io.Reader, stdout io.Writer) error {
	if c.Strategy == "" || c.Wallets < 1 || c.Conc < 1 {
		return fmt.Errorf("bad %s", SpenderEnv)
	}
	ctx := context.Background()
	pool, err := env.ConnectPostgres(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	store, err := ledger.Open(ctx, pool, c.Prefix)
	if err != nil {
		return err
	}
	s := &spender{c: c, store: store, pool: pool, enc: json.NewEncoder(stdout), holds: map[int64]chan struct{}{}}
	if isRedlock(c.Strategy) {
		clients := make([]redis.UniversalClient, len(c.Nodes))
		for i, a := range c.Nodes {
			clients[i] = newClient(a)
		}
		s.redlock = redlock.NewNodes(c.Nodes, clients...)
		defer s.redlock.Close()
	} else if c.Strategy != Version {
		switch {
		case len(c.Cluster) > 0:
			s.rdb = newClusterClient(c.Cluster, c.Direct)
		case len(c.Sentinels) > 0:
			s.rdb = newFailoverClient(c.Sentinels)
		default:
			s.rdb = newClient(c.Redis)
		}
		defer s.rdb.Close()
		if c.Strategy == Fair {
			s.fair = fair.New(s.rdb)
			defer s.fair.Close()
		}
	}
	go s.listen(stdin)
	var wg sync.WaitGroup
	for i := range c.Conc {
		rng := rand.New(rand.NewPCG(c.Seed, uint64(i)))
		wg.Go(func() {
			for !s.stopped.Load() {
				s.spend(ctx, c.First+int64(rng.IntN(c.Wallets)))
			}
		})
	}
	wg.Wait()
	return nil
}

// listen reads "go <req>" lines from the drill, each letting a held spend
// go on. At the end of stdin the spender stops and lets every held spend go.
func (s *spender) listen(stdin io.Reader) {
	sc := bufio.NewScanner(stdin)
	for sc.Scan() {
		req, err := strconv.ParseInt(strings.TrimPrefix(sc.Text(), "go "), 10, 64)
		s.mu.Lock()
		if ch, ok := s.holds[req]; ok && err == nil {
			close(ch)
			delete(s.holds, req)
		}
		s.mu.Unlock()
	}
	s.stopped.Store(true)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ch := range s.holds {
		close(ch)
	}
	clear(s.holds)
}

func (s *spender) emit(e Event) {
	s.out.Lock()
	defer s.out.Unlock()
	s.enc.Encode(e)
}

// announce tells the drill that this spend holds the lock and has read the
// balance; with Hold, it waits until the drill lets it go on, so that a
// pause always lands between the read and the write.
func (s *spender) announce(e Event) {
	e.Ev = "read"
	if !s.c.Hold || s.c.Strategy == Version || s.stopped.Load() {
		s.emit(e)
		return
	}
	ch := make(chan struct{})
	s.mu.Lock()
	s.holds[e.Req] = ch
	s.mu.Unlock()
	s.emit(e)
	select {
	case <-ch:
	case <-time.After(time.Minute): // the drill is gone
	}
}

func (s *spender) done(e Event, ok bool, err error) {
	e.Ev, e.End, e.Result = "spend", time.Now().UnixNano(), uint8(history.Outcome(ok, err))
	switch {
	case errors.Is(err, wallet.ErrUnknownOutcome):
		e.Outcome, e.Why = Unknown, err.Error()
	case err != nil:
		e.Outcome, e.Why = Refused, err.Error()
	case ok:
		e.Outcome = Accepted
	default:
		e.Outcome, e.Why = Refused, "funds short"
	}
	s.emit(e)
}

// spend makes one spend from wallet id with the spender's strategy.
func (s *spender) spend(ctx context.Context, id int64) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second) // bounded, but never cut short by stop
	defer cancel()
	e := Event{Req: s.req.Add(1), Wallet: id, Amount: s.c.Amount, Call: time.Now().UnixNano()}
	ctx = ledger.ObserveReads(ctx, func(b int64) { e.Read = &b }) // the Store tells the history what it read
	if s.c.Strategy == Version {
		e.Start = time.Now().UnixNano()
		s.announce(e)
		ok, _, err := s.store.SpendVersioned(ctx, id, s.c.Amount, s.c.Work)
		s.done(e, ok, err)
		return
	}
	key := ledger.LockKey(s.c.Prefix, id)
	holder, fence, release, err := s.acquire(ctx, key)
	if err != nil { // no lock, no spend: Redis is down or busy
		time.Sleep(20 * time.Millisecond)
		return
	}
	defer func() {
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer rcancel()
		release(rctx)
	}()
	e.Holder, e.Fence = holder, fence
	if s.c.Strategy == Wait {
		n, err := s.wait(ctx, key)
		if err != nil || n < 1 { // gave up before touching the wallet
			why := "no replica acknowledged the lock"
			if err != nil {
				why += ": " + err.Error()
			}
			e.Ev, e.Outcome, e.Why = "spend", Refused, why
			s.emit(e)
			return
		}
	}
	e.Start = time.Now().UnixNano()
	if s.c.Identify && s.rdb != nil {
		e.Server = serverOf(ctx, s.rdb)
	}
	var bal int64
	fenced := s.c.Strategy == Fenced || s.c.Strategy == RedlockFenced
	if s.c.Strategy == RedlockFenced {
		// The lock is held: now take a number no holder has had, from
		// the database that will check it.
		if e.Fence, err = NextFence(ctx, s.pool); err != nil {
			s.done(e, false, err)
			return
		}
	}
	if fenced {
		bal, err = s.store.Claim(ctx, id, e.Fence)
		if s.c.Strategy == Fenced {
			// A fence PostgreSQL has seen: Redis's counter went back (a
			// restart, a failover). Raise it for the next one.
			err = ledger.Heal(ctx, s.rdb, lock.FenceKey(key), err)
		}
	} else {
		bal, err = s.store.Balance(ctx, id)
	}
	if err != nil {
		s.done(e, false, fmt.Errorf("read: %w", err))
		return
	}
	s.announce(e)
	if bal < s.c.Amount {
		s.done(e, false, nil)
		return
	}
	if err := wallet.Work(ctx, s.c.Work); err != nil {
		s.done(e, false, err)
		return
	}
	if fenced {
		err = s.store.WriteFenced(ctx, id, e.Fence, bal-s.c.Amount)
	} else {
		err = s.store.Write(ctx, id, bal-s.c.Amount)
	}
	s.done(e, err == nil, err)
}

// acquire takes the strategy's lock on key, waiting at most 4 TTLs and a
// second, and returns the holder's name as the reports carry it, the
// lock's fence (0 when it has none) and the release.
func (s *spender) acquire(ctx context.Context, key string) (holder string, fence int64, release func(context.Context), err error) {
	ctx, cancel := context.WithTimeout(ctx, 4*s.c.TTL+time.Second)
	defer cancel()
	if isRedlock(s.c.Strategy) {
		rl, err := s.redlock.Acquire(ctx, key, s.c.TTL)
		if err != nil {
			return "", 0, nil, err
		}
		return holderID(rl.Token()), 0, func(ctx context.Context) { rl.Release(ctx) }, nil
	}
	var l *lock.Lock
	switch s.c.Strategy {
	case Fenced:
		l, err = lock.AcquireFenced(ctx, s.rdb, key, lock.FenceKey(key), s.c.TTL)
	case Fair:
		l, err = s.fair.Acquire(ctx, key, s.c.TTL)
	default:
		l, err = lock.Acquire(ctx, s.rdb, key, s.c.TTL)
	}
	if err != nil {
		return "", 0, nil, err
	}
	return shortID(l.ID()), l.Fence, func(ctx context.Context) { l.Release(ctx) }, nil
}

// wait sends WAIT 1 to the server that holds key: on a cluster, its
// master (WAIT has no key, so a cluster client would send it anywhere).
func (s *spender) wait(ctx context.Context, key string) (int64, error) {
	c, ok := s.rdb.(*redis.ClusterClient)
	if !ok {
		return s.rdb.(*redis.Client).Wait(ctx, 1, s.c.TTL/5).Result()
	}
	m, err := c.MasterForKey(ctx, key)
	if err != nil {
		return 0, err
	}
	return m.Wait(ctx, 1, s.c.TTL/5).Result()
}

// holderID names the holder of a token as the spenders report it (the
// first 12 hex digits of lock.Lock's ID), for a token read from a replica.
func holderID(token string) string {
	sum := sha1.Sum([]byte(token))
	return shortID(hex.EncodeToString(sum[:]))
}

// shortID cuts a lock.Lock ID to the length the reports carry.
func shortID(id string) string { return id[:min(12, len(id))] }
