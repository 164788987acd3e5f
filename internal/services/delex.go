package services

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// HasDelex reports whether the server knows DELEX (Redis 8.4 and later):
// COMMAND INFO answers nil for a command it does not have.
func HasDelex(ctx context.Context, rdb redis.UniversalClient) (bool, error) {
	info, err := rdb.Do(ctx, "command", "info", "delex").Slice()
	if err != nil {
		return false, fmt.Errorf("services: ask whether Redis has DELEX: %w", err)
	}
	return len(info) == 1 && info[0] != nil, nil
}

// ReleaseMethod says how a release asked for with want ("auto", "lua" or
// "delex") deletes a lock key on this server, as lock.Release and
// lock.ReleaseLua decide it: "delex" where the server has DELEX and want
// is not "lua", "lua" otherwise. want "delex" on a server without DELEX is
// an error that names version and the fix, so that a program can stop
// before it runs anything.
func ReleaseMethod(ctx context.Context, rdb redis.UniversalClient, want, version string) (string, error) {
	delex, err := HasDelex(ctx, rdb)
	switch {
	case err != nil:
		return "", err
	case want == "delex" && !delex:
		return "", fmt.Errorf("-release delex needs Redis 8.4 or later, this server is Redis %s; use -release lua or auto", version)
	case delex && want != "lua":
		return "delex", nil
	}
	return "lua", nil
}
