package labtest

import (
	"context"
	"testing"
	"time"
)

func TestStartRedis_aServerThatFreezesAndThaws(t *testing.T) {
	srv := StartRedis(t)
	rdb := srv.Use(t)
	ping := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		return rdb.Ping(ctx).Err()
	}
	if err := ping(); err != nil {
		t.Fatalf("PING: %v", err)
	}
	srv.Freeze(t)
	if err := ping(); err == nil {
		t.Error("a frozen server answered PING")
	}
	srv.Thaw()
	if err := ping(); err != nil {
		t.Errorf("PING after Thaw: %v", err)
	}
}
