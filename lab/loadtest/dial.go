package loadtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/redlock"
)

// Connection pools are sized to the workers, within limits. With the
// drivers' defaults (go-redis: 10 per CPU; pgxpool: 4, or one per CPU) 64
// workers on two cores would mostly queue for a connection, and the table
// would measure the pool instead of the strategy.
const (
	// MaxRedisConns caps the Redis pool. Redis runs one command at a time,
	// so more connections than this would only move the queue from the
	// pool into Redis.
	MaxRedisConns = 256
	// MaxPostgresConns caps the PostgreSQL pool. The local server allows
	// 200 connections and the tests of every package share them; a
	// forupdate spend holds its connection while it waits for the row, so
	// beyond 50 workers the pool becomes part of what is measured (the
	// report says so).
	MaxPostgresConns = 50
)

// connBuffer is the read and the write buffer of each Redis connection:
// the commands of a spend are a few dozen bytes, and go-redis's 32 KiB
// each would make a 1,024-connection pool 64 MiB.
const connBuffer = 4 << 10

// commandTimeout bounds each Redis command of a run: a server that stops
// answering (frozen, or its host paused) fails a command within it instead
// of go-redis's default of 3 s, retried. A local command takes well under
// a millisecond, so it never cuts a slow but live one; and after Ctrl-C no
// call into a frozen Redis holds the run longer than this.
const commandTimeout = time.Second

// Env is what a run talks to. Redis is always there: a run takes a lease
// on its prefix in it (see Run). Postgres is nil when none of the chosen
// strategies needs it.
type Env struct {
	Redis    redis.UniversalClient // a *redis.ClusterClient when REDIS_ADDR names a cluster
	Postgres *pgxpool.Pool

	redisPool int // connections per Redis server (per node on a cluster)

	// FairReads is the client of the fair lock's readers, with a pool
	// of its own (see FairReadersPool); nil when the run has no fair
	// strategy.
	FairReads redis.UniversalClient
	fairPool  int

	calls *env.CallCounter // the commands sent to Redis; nil when Dial did not make Redis

	// The servers' versions, for the report.
	redisVersion, postgresVersion string

	// Redlock is the nodes of the redlock strategy; nil when the run
	// has none.
	Redlock *redlock.Nodes
}

// Dial connects to the services the strategies of cfg need, and to Redis
// in any case (for the run lease), with pools sized for the most workers
// of cfg, opens every connection up front, so that the first strategy
// does not pay for dialling them, and reads the servers' versions. Its
// errors name the address and the fix.
func Dial(ctx context.Context, cfg Config) (*Env, error) {
	needRedis, needPostgres := cfg.needs()
	e := &Env{}
	// env.Connect says where it looked if Redis does not answer.
	probe, err := env.Connect(ctx)
	if err != nil {
		return nil, err
	}
	probe.Close()
	opt, err := env.RedisOptions()
	if err != nil {
		return nil, err
	}
	opt.PoolSize = 2 // the lease alone
	if needRedis {
		opt.PoolSize = cfg.RedisPool()
	}
	opt.PoolTimeout = cfg.Timeout
	opt.ReadTimeout, opt.WriteTimeout = commandTimeout, commandTimeout
	opt.ReadBufferSize, opt.WriteBufferSize = connBuffer, connBuffer
	// A command that timed out may have run: a spend counts it as an
	// unknown outcome, and must not send it a second time (on a cluster
	// too, see env.ClusterOptions).
	opt.MaxRetries = -1
	watchRedisPoolWaits() // each spend's wait for a connection, apart from its lock wait
	e.Redis = env.NewClient(opt)
	e.redisPool = opt.PoolSize
	e.calls = &env.CallCounter{}
	e.Redis.AddHook(e.calls)
	if slices.Contains(cfg.Strategies, "fair") {
		// The readers' blocking XREADs must not take the spenders'
		// connections: that wait would pass for lock wait (issue 35).
		ro := *opt
		ro.PoolSize = cfg.FairReadersPool()
		ro.PoolTimeout = commandTimeout // a reader tries again; it never holds a spend up
		e.FairReads = env.NewClient(&ro)
		e.fairPool = ro.PoolSize
	}
	if slices.Contains(cfg.Strategies, Redlock) {
		if e.Redlock, err = openRedlock(ctx, cfg, e.calls); err != nil {
			e.Close()
			return nil, err
		}
	}
	if needPostgres {
		probe, err := env.ConnectPostgres(ctx)
		if err != nil {
			e.Close()
			return nil, err
		}
		pcfg := probe.Config()
		probe.Close()
		pcfg.MaxConns = int32(cfg.PostgresPool())
		pcfg.ConnConfig.Tracer = postgresWaits{}
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			e.Close()
			return nil, err
		}
		e.Postgres = pool
	}
	if err := e.warm(ctx); err != nil {
		e.Close()
		return nil, err
	}
	if e.redisVersion, err = env.RedisVersion(ctx, e.Redis); err == nil && e.Postgres != nil {
		e.postgresVersion, err = env.PostgresVersion(ctx, e.Postgres)
	}
	if err != nil {
		e.Close()
		return nil, err
	}
	return e, nil
}

// warm opens every connection of both pools: it takes them all at once,
// then gives them back.
func (e *Env) warm(ctx context.Context) error {
	if rdb, ok := e.Redis.(*redis.Client); ok {
		// One at a time: go-redis v9.23 races with itself when several
		// Conns set up new connections concurrently. A dial is a fraction
		// of a millisecond on the same machine. A cluster client has a
		// pool per node and no Conn: its pools fill as the run goes.
		conns := make([]*redis.Conn, 0, e.redisPool)
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for range cap(conns) {
			c := rdb.Conn()
			conns = append(conns, c)
			if err := c.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("loadtest: open the Redis pool: %w", err)
			}
		}
	}
	if e.Postgres != nil {
		// Concurrently: a PostgreSQL connection takes a few milliseconds
		// to set up, 50 of them in a row would add up.
		conns := make([]*pgxpool.Conn, e.Postgres.Config().MaxConns)
		errs := make([]error, len(conns))
		var wg sync.WaitGroup
		for i := range conns {
			wg.Go(func() { conns[i], errs[i] = e.Postgres.Acquire(ctx) })
		}
		wg.Wait()
		for _, c := range conns {
			if c != nil {
				c.Release()
			}
		}
		if i := slices.IndexFunc(errs, func(err error) bool { return err != nil }); i >= 0 {
			return fmt.Errorf("loadtest: open the PostgreSQL pool: %w", errs[i])
		}
	}
	return nil
}

// Close closes what Dial opened.
func (e *Env) Close() {
	if e.Redis != nil {
		e.Redis.Close()
	}
	if e.FairReads != nil {
		e.FairReads.Close()
	}
	if e.Postgres != nil {
		e.Postgres.Close()
	}
	if e.Redlock != nil {
		e.Redlock.Close()
	}
}
