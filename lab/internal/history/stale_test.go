package history_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// replicaReads sends reads to a replica and writes to the primary, as
// go-redis's cluster client does with ReadOnly, RouteByLatency or
// RouteRandomly.
type replicaReads struct {
	redis.Cmdable // the primary
	replica       redis.Cmdable
}

func (r replicaReads) Get(ctx context.Context, key string) *redis.StringCmd {
	return r.replica.Get(ctx, key)
}

// seen remembers the balance a spend read, for the history.
type seen struct {
	redis.Cmdable
	read int64
}

func (s *seen) Get(ctx context.Context, key string) *redis.StringCmd {
	cmd := s.Cmdable.Get(ctx, key)
	if n, err := cmd.Int64(); err == nil {
		s.read = n
	}
	return cmd
}

// TestStaleRead_onlyTheHistoryCatchesIt: a top-up lands on the primary,
// and a spend whose read goes to a replica that has not seen it is
// refused for funds while the primary holds the money. No balance is
// wrong (a refusal writes nothing), so the balance check says OK; the
// history says no order of the operations explains that refusal.
//
// The replica lags deterministically: once it has synced the empty
// wallet, the primary refuses it PSYNC and SYNC (an ACL rule) and drops
// its link, so it keeps serving what it had (replica-serve-stale-data,
// Redis's default) for as long as the test needs.
func TestStaleRead_onlyTheHistoryCatchesIt(t *testing.T) {
	primary := labtest.StartRedis(t, "--repl-diskless-sync-delay", "0")
	replica := labtest.StartRedis(t, "--replicaof", strings.Replace(primary.Addr, ":", " ", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p := client(t, primary.Addr)
	r := client(t, replica.Addr)
	key := ledger.BalanceKey("walletlock:stale-read:", 1)
	const amount = 10
	log := history.NewRecorder(0)
	setAt := func(balance int64) {
		call := history.Now()
		if err := p.Set(ctx, key, balance, 0).Err(); err != nil {
			t.Fatal(err)
		}
		log.Add(history.Op{Wallet: 1, Call: call, Return: history.Now(), Read: balance, Result: history.Set})
	}
	spendVia := func(client int, rdb redis.Cmdable) bool {
		t.Helper()
		s := &seen{Cmdable: rdb, read: history.NoRead}
		call := history.Now()
		ok, err := wallet.Spend(ctx, s, key, amount, 0)
		log.Add(history.Op{Wallet: 1, Client: client, Call: call, Return: history.Now(), Amount: amount, Read: s.read, Result: history.Outcome(ok, err)})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	setAt(0) // the wallet opens empty, and the replica syncs it
	waitFor(t, ctx, "the replica to sync", func() bool {
		info, _ := r.Info(ctx, "replication").Result()
		got, err := r.Get(ctx, key).Int64()
		return strings.Contains(info, "master_link_status:up") && err == nil && got == 0
	})
	must(t, p.Do(ctx, "ACL", "SETUSER", "default", "-psync", "-sync").Err())
	must(t, p.Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err())
	waitFor(t, ctx, "the replica's link to go down", func() bool {
		info, _ := r.Info(ctx, "replication").Result()
		return strings.Contains(info, "master_link_status:down")
	})

	setAt(100) // the top-up, which the replica never sees
	if spendVia(0, replicaReads{Cmdable: p, replica: r}) {
		t.Fatal("the spend that read the replica was accepted; the test needs it to read the stale 0")
	}
	if !spendVia(1, p) {
		t.Fatal("the spend that read the primary was refused")
	}
	final, err := p.Get(ctx, key).Int64()
	must(t, err)
	at := history.Now()
	log.Add(history.Op{Wallet: 1, Call: at, Return: at, Read: final, Result: history.Read})

	// One spend accepted from the 100 of the top-up: 90, as the check wants.
	if v := wallet.Check(100, amount, wallet.Tally{Accepted: 1}, final); !v.OK {
		t.Errorf("balance check: got %s, want OK", v)
	}
	v := log.Check(ctx, history.DefaultLimits)
	if v.Linearizable != history.No {
		t.Errorf("history: got linearizable=%s (%s), want no", v, v.Why)
	}
	t.Logf("balance check OK, linearizable=%s: %s", v, v.Why)

	// The same operations without the replica's read are linearizable.
	var fresh []history.Op
	for _, op := range log.Ops() {
		if op.Client != 0 || op.Result != history.RefusedFunds {
			fresh = append(fresh, op)
		}
	}
	if v := history.Check(ctx, fresh, history.DefaultLimits); v.Linearizable != history.Yes {
		t.Errorf("without the stale read: got linearizable=%s (%s), want yes", v, v.Why)
	}
}

func client(t *testing.T, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { c.Close() })
	return c
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// waitFor polls ok until it holds, failing the test when ctx ends first.
func waitFor(t *testing.T, ctx context.Context, what string, ok func() bool) {
	t.Helper()
	for !ok() {
		select {
		case <-ctx.Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
