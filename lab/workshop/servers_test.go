package workshop

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet/postgres"
)

// startTestServers starts the race's servers on loopback, removed when
// the test ends; it skips where redis-server or PostgreSQL is missing.
func startTestServers(t *testing.T) *servers {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s, err := startServers(ctx, "127.0.0.1", 0, 0)
	if err != nil {
		testenv.Missing(t, fmt.Errorf("the race's servers: %w", err))
	}
	t.Cleanup(s.close)
	return s
}

// as is a laptop's clients, as its creds make them.
func as(t *testing.T, c Creds) (*redis.Client, *pgxpool.Pool) {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: c.Redis, Username: c.User, Password: c.Password, MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	pool, err := pgxpool.New(t.Context(), c.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return rdb, pool
}

// A laptop's user may touch its own keys and the shared wallet's, and no
// other; its role sees and updates its own wallet and the shared one,
// and deletes and inserts none.
func TestServers_aLaptopReachesItsOwnAndTheShared(t *testing.T) {
	s := startTestServers(t)
	ctx := t.Context()
	ana, err := s.addUser(ctx, "ana", 100)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := s.addUser(ctx, "bob", 101)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "INSERT INTO walletlock_wallets (id, balance, owner) VALUES ($1, 500, $2)", sharedWallet, sharedOwner); err != nil {
		t.Fatal(err)
	}
	rAna, pAna := as(t, ana)
	rBob, _ := as(t, bob)
	if err := rBob.Set(ctx, bob.Prefix+"lock", "bob's", 0).Err(); err != nil {
		t.Fatalf("bob's SET of his own key: %v", err)
	}
	for _, ok := range [][]any{{"SET", ana.Prefix + "lock", "x"}, {"SET", sharedPrefix + "lock", "x"}, {"EVAL", "return redis.call('GET', KEYS[1])", "1", ana.Prefix + "lock"}} {
		if err := rAna.Do(ctx, ok...).Err(); err != nil {
			t.Errorf("ana: %v: %v", ok, err)
		}
	}
	for _, no := range [][]any{{"FLUSHALL"}, {"FLUSHDB"}, {"GET", bob.Prefix + "lock"}, {"DEL", bob.Prefix + "lock"},
		{"EVAL", "return redis.call('DEL', KEYS[1])", "1", bob.Prefix + "lock"}, {"KEYS", "*"}, {"CONFIG", "GET", "*"},
		{"DEBUG", "SLEEP", "0"}, {"SHUTDOWN"}, {"ACL", "SETUSER", "room-ana", "~*"}, {"SELECT", "1"}} {
		err := rAna.Do(ctx, no...).Err()
		if err == nil || !strings.Contains(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("ana: %v: %v, want NOPERM", no, err)
		}
	}
	if v, err := rBob.Get(ctx, bob.Prefix+"lock").Result(); v != "bob's" {
		t.Errorf("bob's key after ana's attempts: %q, %v", v, err)
	}

	store, err := postgres.Open(ctx, pAna, "ana")
	if err != nil {
		t.Fatalf("ana opens the wallets' table: %v", err)
	}
	if _, err := store.Balance(ctx, ana.Wallet); err != nil {
		t.Errorf("ana reads her wallet: %v", err)
	}
	if err := store.Write(ctx, sharedWallet, 490); err != nil {
		t.Errorf("ana writes the shared wallet: %v", err)
	}
	if _, err := store.Balance(ctx, bob.Wallet); !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("ana reads bob's wallet: %v, want no row", err)
	}
	if err := store.Write(ctx, bob.Wallet, 7); !errors.Is(err, postgres.ErrStale) {
		t.Errorf("ana writes bob's wallet: %v, want no row changed", err)
	}
	for _, sql := range []string{"DELETE FROM walletlock_wallets", "INSERT INTO walletlock_wallets (id, balance) VALUES (9, 9)", "DROP TABLE walletlock_wallets"} {
		if _, err := pAna.Exec(ctx, sql); err == nil || !strings.Contains(err.Error(), "42501") && !strings.Contains(err.Error(), "must be owner") {
			t.Errorf("ana: %s: %v, want permission denied", sql, err)
		}
	}
	var n int
	s.pool.QueryRow(ctx, "SELECT count(*) FROM walletlock_wallets").Scan(&n)
	if n != 3 {
		t.Errorf("%d wallets after ana's attempts, want 3", n)
	}
	bad := ana
	bad.Postgres = strings.Replace(ana.Postgres, ana.Password, "guess", 1)
	if _, p := as(t, bad); p.Ping(ctx) == nil {
		t.Error("ana's role logged in with a wrong password")
	}
}
