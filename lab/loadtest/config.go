package loadtest

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/lock"
)

// ErrBadConfig is matched by every error of Validate and ParseStrategies:
// a program maps it to exit status 2.
var ErrBadConfig = errors.New("loadtest: bad configuration")

// Config is one run: the strategies to compare and the workload each of them
// gets, on wallets of its own.
type Config struct {
	Strategies []string // names from Strategies(), run in this order

	Wallets int // wallets the workers spend from
	Workers int // goroutines that spend concurrently
	// Sweep, when set, replaces Workers with a contention sweep: every
	// strategy runs once at each of these worker counts, in this order.
	// ParseWorkers reads it from -workers.
	Sweep []int

	Duration time.Duration // per strategy
	Ops      int64         // per strategy: stop after this many spends (0: no limit; Duration still applies)
	Work     time.Duration // time between the read and the write of each spend
	Amount   int64         // taken by each spend
	Initial  int64         // starting balance of every wallet
	Seed     uint64        // seeds the workers' wallet picks
	Hot      bool          // every spend goes to the first wallet

	// Pool, when above 0, is the size of each connection pool (-pool):
	// the Redis pool, and the PostgreSQL pool up to MaxPostgresConns.
	// 0 sizes them to the most workers (see RedisPool, PostgresPool).
	Pool int

	TTL     time.Duration // lease of the Redis locks
	Timeout time.Duration // bounds each spend, waiting for its lock included

	// Prefix is where the Redis keys go, and the owner of the PostgreSQL
	// rows (see ledger.Open). Run holds a lease on it while it
	// runs, so a second run on the same prefix is refused.
	Prefix string
	// FirstID is the first PostgreSQL wallet; a run uses FirstID ..
	// FirstID+Wallets-1. ledger.FirstIDFor(Prefix) gives each prefix ids of its
	// own; rows that another run holds are refused, never shared.
	FirstID int64

	// History is what becomes of each spend's record (see HistoryMode).
	History HistoryMode

	// Progress, when not nil, gets a progress bar while the run goes on
	// (give it a terminal; nothing else wants carriage returns).
	Progress io.Writer
}

// Defaults are the settings of `go run ./cmd/loadtest`: ten strategies of
// 4 s each, about 45 s in all.
func Defaults() Config {
	return Config{
		Strategies: Strategies(),
		Wallets:    16,
		Workers:    64,
		Duration:   4 * time.Second,
		Work:       time.Millisecond,
		Amount:     10,
		// Far more than any run can spend (a million spends take 10
		// million), so only -initial set low makes funds run out.
		Initial: 1_000_000_000,
		Seed:    1,
		TTL:     2 * time.Second,
		Timeout: 10 * time.Second,
		Prefix:  ledger.DefaultPrefix + "loadtest:",
		FirstID: ledger.FirstIDFor(ledger.DefaultPrefix + "loadtest:"),
	}
}

// Upper bounds of a run: a laptop runs them, a typo does not fill a shared
// database (-wallets 100000000 would be 10^8 rows). Every duration is at
// most harness.MaxDuration.
const (
	MaxWorkers = harness.MaxN
	MaxWallets = ledger.IDBlock // a run's wallets fit in the block of ids its prefix owns
	MaxLevels  = 10             // worker counts in one sweep: each runs every strategy
	// MaxPool bounds -pool: Redis serves 10,000 clients by default, and
	// other programs share it.
	MaxPool = 1024
)

// ParseStrategies reads a -strategy flag: "all", one name, or names separated
// by commas (harness.Pick). Its error matches ErrBadConfig.
func ParseStrategies(s string) ([]string, error) {
	names, err := harness.Pick("-strategy", s, Strategies())
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadConfig, err)
	}
	return names, nil
}

// ParseWorkers reads a -workers flag: one count ("64"), or a list of counts
// ("2,8,50") for a contention sweep; a count given twice runs once.
// Validate checks the counts.
func ParseWorkers(s string) ([]int, error) {
	var counts []int
	for field := range strings.SplitSeq(s, ",") {
		field = strings.TrimSpace(field)
		n, err := strconv.Atoi(field)
		if err != nil {
			return nil, fmt.Errorf("%w: -workers wants a count or a list of counts such as 2,8,50, got %q", ErrBadConfig, s)
		}
		if !slices.Contains(counts, n) {
			counts = append(counts, n)
		}
	}
	return counts, nil
}

// Levels returns the worker counts the run goes through, in order: Sweep
// when it is set, Workers alone otherwise.
func (c Config) Levels() []int {
	if len(c.Sweep) > 0 {
		return c.Sweep
	}
	return []int{c.Workers}
}

// maxWorkers is the largest worker count of the run: the pools are sized
// to it.
func (c Config) maxWorkers() int { return slices.Max(c.Levels()) }

// Validate says what is wrong with c, in one line that names the flag.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrBadConfig}, a...)...)
	}
	switch {
	case len(c.Strategies) == 0:
		return bad("no strategy to run")
	case c.Wallets < 1:
		return bad("-wallets must be at least 1, got %d", c.Wallets)
	case c.Wallets > MaxWallets:
		return bad("-wallets must be at most %d, got %d", MaxWallets, c.Wallets)
	case len(c.Sweep) > MaxLevels:
		return bad("-workers lists %d counts, at most %d: each runs every strategy", len(c.Sweep), MaxLevels)
	case c.Duration <= 0:
		return bad("-duration must be above 0, got %v", c.Duration)
	case c.Ops < 0:
		return bad("-ops must be 0 (no limit) or more, got %d", c.Ops)
	case c.Work < 0:
		return bad("-work must be at least 0, got %v", c.Work)
	case c.Amount < 1:
		return bad("-amount must be at least 1, got %d", c.Amount)
	case c.Amount > ledger.MaxAmount:
		// The check line counts in int64 (wallet.Check).
		return bad("-amount must be at most %d, got %d", ledger.MaxAmount, c.Amount)
	case c.Initial < 0:
		return bad("-initial must be at least 0, got %d", c.Initial)
	case c.Initial > math.MaxInt64/int64(c.Wallets):
		// The check line sums the balances of every wallet.
		return bad("-initial %d times -wallets %d does not fit in an int64: lower one of them", c.Initial, c.Wallets)
	case c.Timeout <= 0:
		return bad("-timeout must be above 0, got %v", c.Timeout)
	case c.Duration > harness.MaxDuration:
		return bad("%v", harness.CheckDuration("-duration", c.Duration))
	case c.Work > harness.MaxDuration:
		return bad("%v", harness.CheckDuration("-work", c.Work))
	case c.TTL > harness.MaxDuration:
		return bad("%v", harness.CheckDuration("-ttl", c.TTL))
	case c.Timeout > harness.MaxDuration:
		return bad("%v", harness.CheckDuration("-timeout", c.Timeout))
	case c.FirstID < 1 || c.FirstID > math.MaxInt64-int64(c.Wallets):
		return bad("-first-id must be at least 1 and leave room for %d wallets, got %d", c.Wallets, c.FirstID)
	case c.Pool < 0 || c.Pool > MaxPool:
		return bad("-pool must be 0 (sized to the workers) or 1 to %d connections, got %d", MaxPool, c.Pool)
	case c.Prefix == "":
		return bad("-prefix must not be empty: every key this program writes needs one")
	}
	for _, n := range c.Levels() {
		switch {
		case n < 1:
			return bad("-workers must be at least 1, got %d", n)
		case n > MaxWorkers:
			return bad("-workers must be at most %d, got %d", MaxWorkers, n)
		}
	}
	for _, name := range c.Strategies {
		if _, ok := strategyByName(name); !ok {
			return bad("unknown strategy %q (want all or some of %s)", name, strings.Join(Strategies(), ", "))
		}
	}
	if err := lock.CheckTTL(c.TTL); err != nil {
		return bad("-ttl: %v", err)
	}
	return nil
}

// RedisPool is the size of the Redis pool of a run (and of each Redlock
// node's): -pool when set, else one connection per worker up to
// MaxRedisConns.
func (c Config) RedisPool() int {
	if c.Pool > 0 {
		return c.Pool
	}
	return min(max(c.maxWorkers(), 1), MaxRedisConns)
}

// maxFairReaders caps the pool of the fair lock's readers: at 10,000
// workers on 100,000 wallets, 256 readers with a connection each cut
// fair's rate to a third of what they made sharing the spenders' pool.
const maxFairReaders = 32

// FairReadersPool is the size of the pool of the fair lock's readers, apart
// from the spenders' (RedisPool): one connection per wallet that can have
// waiters at once, up to maxFairReaders. -pool does not size it.
func (c Config) FairReadersPool() int {
	if c.Hot {
		return 1
	}
	return min(c.Wallets, max(c.maxWorkers(), 1), maxFairReaders)
}

// PostgresPool is the size of the PostgreSQL pool: -pool or the workers,
// at most MaxPostgresConns either way.
func (c Config) PostgresPool() int {
	n := c.Pool
	if n == 0 {
		n = max(c.maxWorkers(), 1)
	}
	return min(n, MaxPostgresConns)
}

// needs reports which services the chosen strategies use.
func (c Config) needs() (redis, postgres bool) {
	for _, name := range c.Strategies {
		s, _ := strategyByName(name)
		redis = redis || s.trips.Redis > 0 || !s.inPostgres
		postgres = postgres || s.trips.Postgres > 0
	}
	return redis, postgres
}
