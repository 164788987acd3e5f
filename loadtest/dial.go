package loadtest

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/wallet"
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

// Env is what a run talks to. A field is nil when none of the chosen
// strategies needs that service.
type Env struct {
	Redis    *redis.Client
	Postgres *pgxpool.Pool
}

// Dial connects to the services the strategies of cfg need, with pools
// sized for cfg.Workers. Its errors are wallet.Connect's and
// wallet.ConnectPostgres's: one line that names the address and the fix.
func Dial(ctx context.Context, cfg Config) (*Env, error) {
	needRedis, needPostgres := cfg.needs()
	env := &Env{}
	if needRedis {
		// wallet.Connect checks that Redis answers and says where it
		// looked if not; the sized client reuses the same settings.
		probe, err := wallet.Connect(ctx)
		if err != nil {
			return nil, err
		}
		probe.Close()
		opt, err := wallet.RedisOptions()
		if err != nil {
			return nil, err
		}
		opt.PoolSize = min(max(cfg.Workers, 1), MaxRedisConns)
		opt.PoolTimeout = cfg.Timeout
		env.Redis = redis.NewClient(opt)
	}
	if needPostgres {
		probe, err := wallet.ConnectPostgres(ctx)
		if err != nil {
			env.Close()
			return nil, err
		}
		pcfg := probe.Config()
		probe.Close()
		pcfg.MaxConns = int32(min(max(cfg.Workers, 1), MaxPostgresConns))
		pool, err := pgxpool.NewWithConfig(ctx, pcfg)
		if err != nil {
			env.Close()
			return nil, err
		}
		env.Postgres = pool
	}
	return env, nil
}

// Close closes what Dial opened.
func (e *Env) Close() {
	if e.Redis != nil {
		e.Redis.Close()
	}
	if e.Postgres != nil {
		e.Postgres.Close()
	}
}
