package loadtest_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/lab/loadtest"
)

// A cluster buys availability: kill -9 the master that holds the run
// lease's slot mid-run, and the run follows the promotion of its replica.
// Every strategy runs, every phase reads its balances back, the spends that
// failed meanwhile are counted as errors or unknown outcomes (and the
// verdict allows for the unknown ones), and nothing is left behind.
func TestRun_followsAClusterFailover(t *testing.T) {
	cl := labtest.StartCluster(t)
	cl.Use(t)
	c, env := setup(t, "lock", "fair", "fenced", "atomic")
	c.Wallets, c.Duration = 32, 2*time.Second
	rdb := testenv.Redis(t).(*redis.ClusterClient) // the test's own, not the run's: its commands are not the run's
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()

	// The victim holds the run lease's slot, and a wallet whose balance
	// tells when the first phase (lock) is spending.
	victim := masterOf(t, ctx, rdb, cl, harness.LeaseKey(c.Prefix))
	watched := ""
	for i := range int64(c.Wallets) {
		if k := ledger.BalanceKey(c.Prefix, c.FirstID+i); masterOf(t, ctx, rdb, cl, k) == victim {
			watched = k
			break
		}
	}
	if watched == "" {
		t.Fatalf("none of %d wallets is on the master of the run lease (one time in 400,000)", c.Wallets)
	}
	promoted := make(chan time.Duration, 1)
	go func() {
		for ctx.Err() == nil {
			if n, err := rdb.Get(ctx, watched).Int64(); err == nil && n < c.Initial {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if ctx.Err() != nil {
			return
		}
		cl.Masters[victim].Kill()
		killed := time.Now()
		for !cl.Promoted(ctx, victim) && ctx.Err() == nil {
			time.Sleep(50 * time.Millisecond)
		}
		promoted <- time.Since(killed)
	}()

	rep, err := loadtest.Run(ctx, env, c)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	select {
	case d := <-promoted:
		t.Logf("the replica of %s was promoted %v after the kill", cl.Masters[victim].Addr, d.Round(100*time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the replica was not promoted while the run ran: this test proves nothing")
	}
	var failed int64
	for _, row := range rep.Rows {
		t.Logf("%-7s accepted %d, errors %d, unknown %d (landed %d): %s", row.Strategy, row.Accepted, row.Errors, row.Unknown, row.UnknownLanded, row.Check)
		if row.Check == "" || !row.OK {
			t.Errorf("%s: check %q, note %q: want the balances read back and right", row.Strategy, row.Check, row.Note)
		}
		failed += row.Errors + row.Unknown
	}
	if got := rowNames(rep); !slices.Equal(got, c.Strategies) || len(rep.NotRun) > 0 || rep.Interrupted {
		t.Errorf("rows %v, not run %v, interrupted %v: want every strategy run", got, rep.NotRun, rep.Interrupted)
	}
	if failed == 0 {
		t.Error("no spend failed while a master was dead: the kill did not reach the run")
	}
	if rep.Leftovers != nil {
		t.Errorf("leftovers: %v", rep.Leftovers)
	}
	assertNoKeys(t, rdb, c.Prefix)
	rows := *env
	rows.Redis = nil // its KEYS sees one node; assertNoKeys saw them all
	assertCleanedUp(t, &rows, c)
}

// masterOf returns the index in cl.Masters of the master of key's slot.
func masterOf(t *testing.T, ctx context.Context, rdb *redis.ClusterClient, cl *labtest.Cluster, key string) int {
	t.Helper()
	m, err := rdb.MasterForKey(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range cl.Masters {
		if s.Addr == m.Options().Addr {
			return i
		}
	}
	t.Fatalf("%s is not one of the masters", m.Options().Addr)
	return -1
}

// assertNoKeys checks every master of the cluster for keys under prefix.
func assertNoKeys(t *testing.T, rdb redis.UniversalClient, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := env.ForEachMaster(ctx, rdb, func(ctx context.Context, node redis.Cmdable) error {
		keys, err := node.Keys(ctx, env.GlobEscape(prefix)+"*").Result()
		if len(keys) > 0 {
			t.Errorf("keys left on a master: %v", keys)
		}
		return err
	})
	if err != nil {
		t.Errorf("looking for keys left: %v", err)
	}
}
