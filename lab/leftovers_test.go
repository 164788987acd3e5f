package walletlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/wallet/postgres"
)

// TestNoLeftovers checks what a whole test run promises: no key and no
// row left behind. Every test writes under a prefix of its own that starts
// with test: (testenv.Prefix), and its PostgreSQL rows carry that owner or
// an id of testenv.WalletID's; after `go test ./...` none may remain.
//
// It runs only when WALLETLOCK_LEFTOVERS is set, after every other test
// has ended: `make test` runs it last, as
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
	const shown = 10

	rdb, err := services.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	var keys []string
	err = services.ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.Cmdable) error {
		iter := node.Scan(ctx, 0, "*test:*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatalf("scan Redis for keys matching *test:*: %v", err)
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

	pool, err := postgres.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var exists bool
	if err := pool.QueryRow(ctx, "SELECT to_regclass('walletlock_wallets') IS NOT NULL").Scan(&exists); err != nil {
		t.Fatalf("look for the table walletlock_wallets: %v", err)
	}
	if !exists {
		return // no test made it, so none left a row in it
	}
	// testenv.WalletID's ids are at least 1e9, and every program marks its
	// rows with its prefix: an unowned row there is a test's.
	const where = "owner LIKE 'test:%' OR (owner = '' AND id >= 1000000000)"
	var n int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM walletlock_wallets WHERE "+where).Scan(&n); err != nil {
		t.Fatalf("count the rows tests left: %v", err)
	}
	if n == 0 {
		return
	}
	rows, err := pool.Query(ctx, "SELECT owner, count(*), min(id), max(id) FROM walletlock_wallets WHERE "+where+
		" GROUP BY owner ORDER BY owner LIMIT $1", shown)
	if err != nil {
		t.Fatalf("list the rows tests left: %v", err)
	}
	defer rows.Close()
	var list []string
	for rows.Next() {
		var owner string
		var count, lo, hi int64
		if err := rows.Scan(&owner, &count, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		list = append(list, fmt.Sprintf("owner %q: %d (ids %d to %d)", owner, count, lo, hi))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	t.Errorf("%d rows of walletlock_wallets left by tests, %s; the owner names the test (\"\": an id of testenv.WalletID's), which must delete its rows in t.Cleanup",
		n, strings.Join(list, "; "))
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
