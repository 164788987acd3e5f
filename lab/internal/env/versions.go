package env

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/safe"
)

// RedisVersion returns redis_version from INFO server, such as "7.0.15".
func RedisVersion(ctx context.Context, rdb redis.Cmdable) (string, error) {
	info, err := rdb.Info(ctx, "server").Result()
	if err != nil {
		return "", fmt.Errorf("env: read the Redis version: %w", err)
	}
	if v := InfoField(info, "redis_version"); v != "" {
		return safe.Line(v), nil // the server's words, shown in reports
	}
	return "", errors.New("env: INFO server has no redis_version")
}
