package services

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
)

// PostgresVersion returns the server's version number, such as "15.18"
// (without the distribution suffix SHOW server_version may add), for the
// transcripts.
func PostgresVersion(ctx context.Context, pool *pgxpool.Pool) (string, error) {
	var v string
	if err := pool.QueryRow(ctx, "SHOW server_version").Scan(&v); err != nil {
		return "", fmt.Errorf("services: read the PostgreSQL version: %w", err)
	}
	if f := strings.Fields(v); len(f) > 0 {
		return f[0], nil
	}
	return "", errors.New("services: PostgreSQL reported an empty server_version")
}

// RedisVersion returns redis_version from INFO server, such as "7.0.15".
func RedisVersion(ctx context.Context, rdb redis.Cmdable) (string, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("services: read the Redis version: %w", err)
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return v, nil
		}
	}
	return "", errors.New("services: INFO server has no redis_version")
}
