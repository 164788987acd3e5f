package walletlock_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/wallet/postgres"
)

// TestNoLeftovers checks what a whole test run promises: no key and no
// row left behind, by the root's tests or the lab's. Every test writes
// under a prefix of its own that starts with test: (labtest.Prefix, in
// both modules), and its PostgreSQL rows carry an owner that starts with
// test: (the root's "test:"+t.Name(), a step run on a test's prefix) or
// an id of the lab's labtest.WalletID; after `go test ./...` none may
// remain.
//
// It runs only when WALLETLOCK_LEFTOVERS is set, after every other test
// has ended: `make test` runs it last, after both suites, as
//
//	WALLETLOCK_LEFTOVERS=1 go test -count=1 -run '^TestNoLeftovers$' .
//
// Another run's tests in flight on the same services (a second `make
// test`) would show up here too.
func TestNoLeftovers(t *testing.T) {
	if os.Getenv("WALLETLOCK_LEFTOVERS") == "" {
		t.Skip("set WALLETLOCK_LEFTOVERS=1 to scan Redis and PostgreSQL for what tests left behind (make test does, after the tests)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rdb, err := env.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	pool, err := env.ConnectPostgres(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()

	const shown = 10
	keys, err := leftKeys(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) > 0 {
		var list []string
		for _, k := range keys[:min(len(keys), shown)] {
			ttl, _ := rdb.PTTL(ctx, k).Result()
			list = append(list, fmt.Sprintf("%q (%s)", k, expiry(ttl)))
		}
		t.Errorf("%d Redis keys left by tests, such as %s; find the test by the name in the key, and delete what it writes in t.Cleanup",
			len(keys), strings.Join(list, ", "))
	}
	n, owners, err := leftRows(ctx, pool, shown)
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 {
		t.Errorf("%d rows of walletlock_wallets left by tests, %s; the owner names the test (\"\": an id of labtest.WalletID's), which must delete its rows in t.Cleanup",
			n, strings.Join(owners, "; "))
	}
}

// leftKeys scans every master for the keys tests write: under a prefix
// that starts with test:.
func leftKeys(ctx context.Context, rdb redis.UniversalClient) ([]string, error) {
	var keys []string
	err := env.ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.Cmdable) error {
		iter := node.Scan(ctx, 0, "*test:*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		return iter.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("scan Redis for keys matching *test:*: %w", err)
	}
	return keys, nil
}

// leftRowsWhere are the rows tests write: every program marks its rows
// with its prefix or owner, a test's starting with test:, and the lab's
// labtest.WalletID's ids are at least 1e9: an unowned row there is a
// test's.
const leftRowsWhere = "owner LIKE 'test:%' OR (owner = '' AND id >= 1000000000)"

// leftRows counts the rows tests left, and names up to shown of their
// owners with how many rows each left.
func leftRows(ctx context.Context, pool *pgxpool.Pool, shown int) (int, []string, error) {
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('walletlock_wallets') IS NOT NULL").Scan(&exists); err != nil {
		return 0, nil, fmt.Errorf("look for the table walletlock_wallets: %w", err)
	}
	if !exists {
		return 0, nil, nil // no test made it, so none left a row in it
	}
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM walletlock_wallets WHERE "+leftRowsWhere).Scan(&n); err != nil {
		return 0, nil, fmt.Errorf("count the rows tests left: %w", err)
	}
	if n == 0 {
		return 0, nil, nil
	}
	rows, err := pool.Query(ctx, "SELECT owner, count(*), min(id), max(id) FROM walletlock_wallets WHERE "+leftRowsWhere+
		" GROUP BY owner ORDER BY owner LIMIT $1", shown)
	if err != nil {
		return 0, nil, fmt.Errorf("list the rows tests left: %w", err)
	}
	defer rows.Close()
	var list []string
	for rows.Next() {
		var owner string
		var count, lo, hi int64
		if err := rows.Scan(&owner, &count, &lo, &hi); err != nil {
			return 0, nil, err
		}
		list = append(list, fmt.Sprintf("owner %q: %d (ids %d to %d)", owner, count, lo, hi))
	}
	return n, list, rows.Err()
}

// The scan finds what the root's tests would leave: a key under the root's
// labtest.Prefix ("test:<name>:<random>:"), a step's run lease under it,
// a row of postgres.Open(ctx, pool, "test:"+t.Name()) and one of a step
// run on a test's prefix (owner: the prefix and walletlock:run). The test
// writes one of each, looks, and deletes them; the key expires by itself
// besides.
func TestLeftovers_findWhatTheRootsTestsLeave(t *testing.T) {
	rdb := testenv.Redis(t)
	pool := testenv.Postgres(t)
	ctx := t.Context()
	prefix := "test:" + strings.ReplaceAll(t.Name(), "/", "-") + ":" + rand.Text()[:8] + ":" // the root's labtest.Prefix
	keys := []string{prefix + "wallet:42:balance", prefix + "walletlock:run"}
	owners := []string{"test:" + t.Name(), prefix + "walletlock:run"}
	ids := []int64{labtest.WalletID(t), labtest.WalletID(t)}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, k := range keys {
			rdb.Del(ctx, k)
		}
		for i, id := range ids {
			if _, err := pool.Exec(ctx, "DELETE FROM walletlock_wallets WHERE id = $1 AND owner = $2", id, owners[i]); err != nil {
				t.Errorf("delete wallet %d: %v", id, err)
			}
		}
	})
	for _, k := range keys {
		if err := rdb.Set(ctx, k, 100, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := postgres.Open(ctx, pool, ""); err != nil { // the table, if no test made it yet
		t.Fatal(err)
	}
	for i, id := range ids {
		if _, err := pool.Exec(ctx, "INSERT INTO walletlock_wallets (id, balance, owner) VALUES ($1, 100, $2)", id, owners[i]); err != nil {
			t.Fatal(err)
		}
	}

	left, err := leftKeys(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if !slices.Contains(left, k) {
			t.Errorf("the scan missed the key %q", k)
		}
	}
	for i, id := range ids {
		var found bool
		if err := pool.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM walletlock_wallets WHERE ("+leftRowsWhere+") AND id = $1)", id).Scan(&found); err != nil {
			t.Fatal(err)
		}
		if !found {
			t.Errorf("the scan missed the row of owner %q", owners[i])
		}
	}
	if n, _, err := leftRows(ctx, pool, 10); err != nil || n < len(ids) {
		t.Errorf("leftRows = %d, %v; want at least the %d rows written here", n, err, len(ids))
	}
}

// expiry says when a key goes away by itself, from its PTTL.
func expiry(ttl time.Duration) string {
	switch {
	case ttl == -1: // go-redis's "no expiry"
		return "no expiry"
	case ttl < 0:
		return "gone"
	default:
		return "expires in " + ttl.Round(time.Millisecond).String()
	}
}
