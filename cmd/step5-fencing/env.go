package main

// What the phases share: the flags, the services, the wallet row and the
// keys of this run, and the -json report.

import (
	"context"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// config is what the flags set.
type config struct {
	ttl, pause, work time.Duration
	n, stalls        int
	id               int64
	prefix           string
}

// maxN bounds -n below cli.MaxN: phase 3 hands the lease from spender to
// spender, about 10 ms each, and must end within its hang guard.
const maxN = 1000

// validate checks the flags and returns the phases -phase chose.
func (c config) validate(only string) ([]phase, error) {
	var err error
	switch {
	case lock.CheckTTL(c.ttl) != nil:
		err = fmt.Errorf("-ttl: %w", lock.CheckTTL(c.ttl))
	case c.pause <= c.ttl:
		err = fmt.Errorf("-pause %v must be longer than -ttl %v: a stalled holder must outlive its lease", c.pause, c.ttl)
	case c.work < 0:
		err = fmt.Errorf("-work must be at least 0, got %v", c.work)
	case c.n < 1:
		err = fmt.Errorf("-n must be at least 1, got %d", c.n)
	case c.stalls < 0 || c.stalls > c.n:
		err = fmt.Errorf("-stalls must be between 0 and -n (%d), got %d", c.n, c.stalls)
	case c.id < 1:
		err = fmt.Errorf("-wallet-id must be at least 1, got %d", c.id)
	}
	// The bounds keep phaseLimit, a minute + n x work + stalls x pause, far
	// from overflowing.
	for _, err := range []error{err, cli.CheckPrefix(c.prefix), cli.CheckMax("-n", c.n, maxN),
		cli.CheckDuration("-ttl", c.ttl), cli.CheckDuration("-pause", c.pause), cli.CheckDuration("-work", c.work)} {
		if err != nil {
			return nil, err
		}
	}
	switch {
	case only == "all":
		return phases, nil
	}
	for _, p := range phases {
		if p.name == only {
			return []phase{p}, nil
		}
	}
	return nil, fmt.Errorf("-phase %q: want 1, 2, 3, 4 or all", only)
}

// phaseLimit is how long a phase may run before it is stopped as hung: a
// minute, plus the work and the stalls the flags ask for.
func (c config) phaseLimit() time.Duration {
	return time.Minute + time.Duration(c.n)*c.work + time.Duration(c.stalls)*c.pause
}

// walletFor is the wallet a run on prefix uses when -wallet-id is not
// given: the article's 42 under the default prefix, and under any other a
// number derived from the prefix, so that runs on different prefixes use
// different rows. (Ids from 10,000 to 999,999: below step 6's default
// range, far below the tests'.)
func walletFor(prefix string) int64 {
	if prefix == defaultPrefix {
		return wallet.DemoWallet
	}
	h := fnv.New64a()
	h.Write([]byte(prefix))
	return 10_000 + int64(h.Sum64()%990_000)
}

func needsRedis(chosen []phase) bool {
	for _, p := range chosen {
		if p.redis {
			return true
		}
	}
	return false
}

// env is what every phase works with. rdb is nil when only phase 4 runs.
type env struct {
	config
	store *wallet.Store // owned by the prefix: it resets and deletes only this run's row
	rdb   redis.UniversalClient
}

func (e *env) lockKey() string { return wallet.LockKey(e.prefix, e.id) }

// fresh puts the wallet back to balance with fence 0, and forgets the
// lease and the fence counter, so that a phase's fences start at 1.
func (e *env) fresh(ctx context.Context, balance int64) error {
	if e.rdb != nil {
		if err := e.rdb.Del(ctx, e.lockKey(), lock.FenceKey(e.lockKey())).Err(); err != nil {
			return fmt.Errorf("redis: %w", err)
		}
	}
	return e.store.Reset(ctx, e.id, balance)
}

// outcome is one phase in the output: the lesson's Result (its check line
// and verdicts), the phase's own figures, and the lines the text prints.
type outcome struct {
	lesson.Result
	Figures any `json:"figures"`
	lines   []string
	landed  int // unknown spends the balance says landed (see wallet.Verdict)
}

// report is the -json output.
type report struct {
	Step        string    `json:"step"`
	Redis       string    `json:"redis_version,omitempty"` // empty when only phase 4 ran
	Postgres    string    `json:"postgres_version"`
	Config      shown     `json:"config"`
	Phases      []outcome `json:"phases"`
	Interrupted bool      `json:"interrupted"`                  // Ctrl-C: the phases are those that ran in full
	During      string    `json:"interrupted_during,omitempty"` // the phase Ctrl-C cut short, not judged
}

type shown struct {
	TTL      string `json:"ttl"`
	Pause    string `json:"pause"`
	Work     string `json:"work"`
	Spenders int    `json:"spenders"`
	Stalls   int    `json:"stalls"`
	WalletID int64  `json:"wallet_id"`
	Prefix   string `json:"prefix"`
}

func (c config) show() shown {
	return shown{c.ttl.String(), c.pause.String(), c.work.String(), c.n, c.stalls, c.id, c.prefix}
}

// header is the first line of the text: what the run ran on.
func (r report) header() string {
	if r.Redis == "" {
		return "PostgreSQL " + r.Postgres + ", no Redis"
	}
	return "Redis " + r.Redis + ", PostgreSQL " + r.Postgres + "; lease TTL " + r.Config.TTL
}

// what is the lesson's one-line description of a phase, with this run's
// number of spenders where the lesson says the default's.
func (c config) what(name string) string {
	p, _ := lesson.Lookup(step, name)
	return strings.Replace(p.What, strconv.Itoa(defaultN)+" ", strconv.Itoa(c.n)+" ", 1)
}
