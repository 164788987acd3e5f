package ledger_test

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/labtest"
	"example.com/walletlock/lab/internal/ledger"
	"example.com/walletlock/wallet"
)

// testCtx bounds a test's database calls, so that nothing can hang.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// openStore returns a Store on the test database and its pool.
func openStore(t *testing.T) (*ledger.Store, *pgxpool.Pool) {
	t.Helper()
	pool := testenv.Postgres(t)
	s, err := ledger.Open(testCtx(t), pool, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, pool
}

// newWallet creates a wallet only this test uses, deleted when it ends.
func newWallet(t *testing.T, s *ledger.Store, balance int64) int64 {
	t.Helper()
	id := labtest.WalletID(t)
	if err := s.Reset(testCtx(t), id, balance); err != nil {
		t.Fatalf("Reset(%d, %d): %v", id, balance, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.DeleteRange(ctx, id, 1); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return id
}

func wantBalance(t *testing.T, s *ledger.Store, id, want int64) {
	t.Helper()
	got, err := s.Balance(testCtx(t), id)
	if err != nil {
		t.Fatalf("Balance: %v", err)
	}
	if got != want {
		t.Errorf("balance = %d, want %d", got, want)
	}
}

func TestOpen_twice(t *testing.T) {
	pool := testenv.Postgres(t)
	for i := range 2 {
		if _, err := ledger.Open(testCtx(t), pool, ""); err != nil {
			t.Fatalf("Open #%d: %v", i+1, err)
		}
	}
}

func TestOpen_nilPool(t *testing.T) {
	if _, err := ledger.Open(context.Background(), nil, ""); err == nil {
		t.Fatal("Open(nil) succeeded, want an error")
	}
}

// The table normally exists already, and concurrent CREATE TABLE IF NOT
// EXISTS only collide when it does not. So this test runs Open from
// several goroutines in a schema of its own, where the table is new, and
// drops that schema afterwards.
func TestOpen_concurrentlyOnAFreshSchema(t *testing.T) {
	admin := testenv.Postgres(t)
	ctx := testCtx(t)
	b := make([]byte, 6)
	rand.Read(b)
	schema := "walletlock_test_" + hex.EncodeToString(b)
	quoted := pgx.Identifier{schema}.Sanitize()
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+quoted); err != nil {
		t.Fatalf("create schema: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+quoted+" CASCADE"); err != nil {
			t.Errorf("cleanup: drop schema %s: %v", schema, err)
		}
	})

	cfg, err := pgxpool.ParseConfig(env.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["search_path"] = schema
	cfg.MaxConns = 8
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)

	var stores [8]*ledger.Store
	var next atomic.Int32
	tally := wallet.Hammer(len(stores), func() (bool, error) {
		i := next.Add(1) - 1
		s, err := ledger.Open(ctx, pool, "")
		stores[i] = s
		return err == nil, err
	})
	if len(tally.Errors) > 0 || tally.Accepted != len(stores) {
		t.Fatalf("%d of %d Open calls succeeded; errors: %v", tally.Accepted, len(stores), tally.Errors)
	}
	var where *string
	if err := admin.QueryRow(ctx, "SELECT to_regclass($1)::text", schema+".walletlock_wallets").Scan(&where); err != nil || where == nil {
		t.Fatalf("table not created in %s (err %v)", schema, err)
	}
	s := stores[0]
	if err := s.Reset(ctx, 1, 100); err != nil {
		t.Fatalf("Reset on the new table: %v", err)
	}
	wantBalance(t, s, 1, 100)
}

func TestStore_resetReadWriteDelete(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := newWallet(t, s, 100)
	if got, err := s.Balance(ctx, id); err != nil || got != 100 {
		t.Fatalf("Balance = %d, %v; want 100, nil", got, err)
	}
	if err := s.Write(ctx, id, 70); err != nil {
		t.Fatalf("Write: %v", err)
	}
	wantBalance(t, s, id, 70)
	if _, err := s.Claim(ctx, id, 3); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.Reset(ctx, id, 100); err != nil {
		t.Fatalf("Reset of an existing wallet: %v", err)
	}
	wantBalance(t, s, id, 100)
	if f, err := s.Fence(ctx, id); err != nil || f != 0 {
		t.Errorf("Fence after Reset = %d, %v; want 0, nil", f, err)
	}
	if err := s.DeleteRange(ctx, id, 1); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Balance(ctx, id); !errors.Is(err, ledger.ErrNoWallet) {
		t.Errorf("Balance after Delete: err = %v, want ErrNoWallet", err)
	}
}

func TestStore_missingWallet(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := labtest.WalletID(t) // never created
	calls := map[string]func() error{
		"Balance":        func() error { _, err := s.Balance(ctx, id); return err },
		"Write":          func() error { return s.Write(ctx, id, 1) },
		"Claim":          func() error { _, err := s.Claim(ctx, id, 1); return err },
		"WriteFenced":    func() error { return s.WriteFenced(ctx, id, 1, 1) },
		"SpendFenced":    func() error { _, err := s.SpendFenced(ctx, id, 1, 1, 0); return err },
		"SpendVersioned": func() error { _, _, err := s.SpendVersioned(ctx, id, 1, 0); return err },
		"SpendForUpdate": func() error { _, err := s.SpendForUpdate(ctx, id, 1, 0); return err },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			if err := call(); !errors.Is(err, ledger.ErrNoWallet) {
				t.Errorf("err = %v, want ErrNoWallet", err)
			}
		})
	}
}

func TestStore_checkRefusesNegativeBalance(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := newWallet(t, s, 100)
	if _, err := s.Claim(ctx, id, 1); err != nil {
		t.Fatal(err)
	}
	writes := map[string]func() error{
		"Write":       func() error { return s.Write(ctx, id, -1) },
		"WriteFenced": func() error { return s.WriteFenced(ctx, id, 1, -1) },
		"Reset":       func() error { return s.Reset(ctx, id, -1) },
	}
	for name, write := range writes {
		t.Run(name, func(t *testing.T) {
			err := write()
			var pgErr *pgconn.PgError
			if !errors.As(err, &pgErr) || pgErr.Code != "23514" { // check_violation
				t.Fatalf("err = %v, want a check_violation (23514)", err)
			}
			wantBalance(t, s, id, 100)
		})
	}
}

// Every ordering of a stale holder A (fence 1) and a newer holder B
// (fence 2), each of which reads the balance (Claim) and writes back
// balance-10 (WriteFenced). No write computed from a stale read may be
// accepted, and the final balance must match the accepted writes.
func TestFence_staleAndNewHolderInterleavings(t *testing.T) {
	const initial, amount = 100, 10
	type step struct{ who, op string } // op is "claim" or "write"
	var (
		aClaim = step{"A", "claim"}
		aWrite = step{"A", "write"}
		bClaim = step{"B", "claim"}
		bWrite = step{"B", "write"}
	)
	fences := map[string]int64{"A": 1, "B": 2}
	tests := []struct {
		name     string
		steps    []step
		accepted map[string]bool
		read     map[string]int64 // what each holder's claim returns
	}{
		{
			name:     "B writes between A's read and A's write: A refused",
			steps:    []step{aClaim, bClaim, bWrite, aWrite},
			accepted: map[string]bool{"A": false, "B": true},
			read:     map[string]int64{"A": 100, "B": 100},
		},
		{
			name:     "both read, A writes first: A refused, B accepted",
			steps:    []step{aClaim, bClaim, aWrite, bWrite},
			accepted: map[string]bool{"A": false, "B": true},
			read:     map[string]int64{"A": 100, "B": 100},
		},
		{
			name:     "A writes before B reads: both accepted, B reads A's result",
			steps:    []step{aClaim, aWrite, bClaim, bWrite},
			accepted: map[string]bool{"A": true, "B": true},
			read:     map[string]int64{"A": 100, "B": 90},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openStore(t)
			ctx := testCtx(t)
			id := newWallet(t, s, initial)
			read := map[string]int64{}
			accepted := map[string]bool{}
			for _, st := range tc.steps {
				fence := fences[st.who]
				switch st.op {
				case "claim":
					bal, err := s.Claim(ctx, id, fence)
					if err != nil {
						t.Fatalf("%s claims with fence %d: %v", st.who, fence, err)
					}
					read[st.who] = bal
				case "write":
					current, err := s.Balance(ctx, id)
					if err != nil {
						t.Fatal(err)
					}
					err = s.WriteFenced(ctx, id, fence, read[st.who]-amount)
					var stale *ledger.StaleFenceError
					switch {
					case err == nil:
						accepted[st.who] = true
						if read[st.who] != current {
							t.Errorf("%s's write was computed from a stale read (%d, balance was %d) and was accepted", st.who, read[st.who], current)
						}
					case errors.As(err, &stale):
						if !errors.Is(err, ledger.ErrStaleFence) {
							t.Errorf("%v does not match ErrStaleFence", err)
						}
						want := ledger.StaleFenceError{ID: id, Fence: fence, Highest: fences["B"]}
						if *stale != want {
							t.Errorf("refusal = %+v, want %+v", *stale, want)
						}
					default:
						t.Fatalf("%s writes with fence %d: %v", st.who, fence, err)
					}
				}
			}
			for _, who := range []string{"A", "B"} {
				if accepted[who] != tc.accepted[who] {
					t.Errorf("%s's write accepted = %v, want %v", who, accepted[who], tc.accepted[who])
				}
				if read[who] != tc.read[who] {
					t.Errorf("%s read %d, want %d", who, read[who], tc.read[who])
				}
			}
			n := 0
			for _, ok := range accepted {
				if ok {
					n++
				}
			}
			bal, err := s.Balance(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if v := wallet.Check(initial, amount, wallet.Tally{Accepted: n}, bal); !v.OK {
				t.Errorf("%s", v)
			}
		})
	}
}

func TestClaim_staleFenceReportsHighest(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := newWallet(t, s, 100)
	if _, err := s.Claim(ctx, id, 5); err != nil {
		t.Fatalf("Claim(5): %v", err)
	}
	calls := []struct {
		name string
		call func() error
	}{
		{"Claim with a lower fence", func() error { _, err := s.Claim(ctx, id, 4); return err }},
		{"Claim with fence 1", func() error { _, err := s.Claim(ctx, id, 1); return err }},
		{"WriteFenced with a lower fence", func() error { return s.WriteFenced(ctx, id, 4, 0) }},
		{"WriteFenced with a higher, unclaimed fence", func() error { return s.WriteFenced(ctx, id, 6, 0) }},
		{"SpendFenced with a lower fence", func() error { _, err := s.SpendFenced(ctx, id, 4, 10, 0); return err }},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errors.Is(err, ledger.ErrStaleFence) {
				t.Fatalf("err = %v, want ErrStaleFence", err)
			}
			var stale *ledger.StaleFenceError
			if !errors.As(err, &stale) || stale.ID != id || stale.Highest != 5 {
				t.Fatalf("err = %#v, want a *StaleFenceError for wallet %d with Highest 5", err, id)
			}
			wantBalance(t, s, id, 100)
		})
	}
	// Fence 5 cannot claim twice (a Redis restart may hand it out again to
	// someone else), and a newer holder takes over.
	if _, err := s.Claim(ctx, id, 5); !errors.Is(err, ledger.ErrStaleFence) {
		t.Errorf("Claim(5) twice: err = %v, want ErrStaleFence", err)
	}
	if _, err := s.Claim(ctx, id, 6); err != nil {
		t.Errorf("Claim(6) after Claim(5): %v", err)
	}
}

func TestClaim_badFence(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := newWallet(t, s, 100)
	for _, fence := range []int64{0, -1} {
		calls := map[string]func() error{
			"Claim":       func() error { _, err := s.Claim(ctx, id, fence); return err },
			"WriteFenced": func() error { return s.WriteFenced(ctx, id, fence, 0) },
			"SpendFenced": func() error { _, err := s.SpendFenced(ctx, id, fence, 10, 0); return err },
		}
		for name, call := range calls {
			if err := call(); !errors.Is(err, ledger.ErrBadFence) {
				t.Errorf("%s with fence %d: err = %v, want ErrBadFence", name, fence, err)
			}
		}
	}
	wantBalance(t, s, id, 100)
}

func TestSpendFenced_spends(t *testing.T) {
	s, _ := openStore(t)
	id := newWallet(t, s, 100)
	ok, err := s.SpendFenced(testCtx(t), id, 1, 30, time.Millisecond)
	if !ok || err != nil {
		t.Fatalf("SpendFenced = %v, %v; want true, nil", ok, err)
	}
	wantBalance(t, s, id, 70)
}

func TestSpendFenced_refusesShortFunds(t *testing.T) {
	s, _ := openStore(t)
	id := newWallet(t, s, 5)
	ok, err := s.SpendFenced(testCtx(t), id, 1, 10, 0)
	if ok || err != nil {
		t.Fatalf("SpendFenced = %v, %v; want false, nil", ok, err)
	}
	wantBalance(t, s, id, 5)
}

// hook is a pgx tracer that calls fn once, in the goroutine of the call,
// for the first statement whose SQL contains sql: just before the statement
// is sent or, with atEnd, just after its reply has been read, before the
// call that sent it returns. It lets a test end a context at an exact
// point of a spend.
type hook struct {
	sql   string
	atEnd bool
	fn    func()
	once  sync.Once
}

type hookedKey struct{}

func (h *hook) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if h.fn == nil || !strings.Contains(d.SQL, h.sql) {
		return ctx
	}
	if h.atEnd {
		return context.WithValue(ctx, hookedKey{}, true)
	}
	h.once.Do(h.fn)
	return ctx
}

func (h *hook) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryEndData) {
	if ctx.Value(hookedKey{}) != nil {
		h.once.Do(h.fn)
	}
}

// hookedStore returns a Store on a pool of its own that runs h, and the
// application_name its connections carry, by which waiting finds them. Set
// h's fields before the call the test is about, not during it.
func hookedStore(t *testing.T, h *hook) (*ledger.Store, string) {
	t.Helper()
	testenv.Postgres(t) // skips, or fails under CI, when PostgreSQL is down
	cfg, err := pgxpool.ParseConfig(env.DatabaseURL())
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 6)
	rand.Read(b)
	app := "walletlock-test-" + hex.EncodeToString(b)
	cfg.ConnConfig.RuntimeParams["application_name"] = app
	cfg.ConnConfig.Tracer = h
	cfg.MaxConns = 2
	pool, err := pgxpool.NewWithConfig(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s, err := ledger.Open(testCtx(t), pool, "")
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s, app
}

// The ctx is cancelled, with a cause, right after the claim's reply has
// been read, so it ends during the work whatever the machine's speed.
func TestSpendFenced_ctxEndsDuringWork(t *testing.T) {
	h := &hook{}
	s, _ := hookedStore(t, h)
	id := newWallet(t, s, 100)
	lost := errors.New("lease lost")
	ctx, cancel := context.WithCancelCause(testCtx(t))
	defer cancel(nil)
	h.sql, h.atEnd, h.fn = "SET fence =", true, func() { cancel(lost) }

	ok, err := s.SpendFenced(ctx, id, 7, 10, time.Hour)
	if ok || !errors.Is(err, context.Canceled) || !errors.Is(err, lost) {
		t.Fatalf("SpendFenced = %v, %v; want false, context.Canceled and the cause", ok, err)
	}
	if !strings.Contains(err.Error(), "before the write") {
		t.Errorf("err = %v, want the work's error (the claim had succeeded)", err)
	}
	if errors.Is(err, wallet.ErrUnknownOutcome) {
		t.Errorf("err = %v matches ErrUnknownOutcome, but nothing was written", err)
	}
	if f, err := s.Fence(testCtx(t), id); err != nil || f != 7 {
		t.Errorf("Fence = %d, %v; want 7: the claim was made", f, err)
	}
	wantBalance(t, s, id, 100)
}

// stall locks wallet id's row in a transaction of its own, on another
// connection, until release is called or the test ends. Statements that
// need the row wait meanwhile.
//
// The transaction also holds a lock on the table, which ALTER TABLE (run
// by a concurrent test, say) would wait for, and everything after that
// ALTER for it in turn. Release as soon as the moment has passed.
func stall(t *testing.T, id int64) (release func()) {
	t.Helper()
	pool := testenv.Postgres(t)
	tx, err := pool.Begin(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			tx.Rollback(ctx)
		})
	}
	t.Cleanup(release)
	if _, err := tx.Exec(testCtx(t), "SELECT 1 FROM walletlock_wallets WHERE id = $1 FOR UPDATE", id); err != nil {
		t.Fatal(err)
	}
	return release
}

// waiting returns the process ID of a backend with application_name app
// that waits for a lock, 0 while none does.
func waiting(t *testing.T, app string) uint32 {
	t.Helper()
	var pid uint32
	err := testenv.Postgres(t).QueryRow(testCtx(t),
		"SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock' LIMIT 1", app).Scan(&pid)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		t.Errorf("look for a waiting statement: %v", err)
	}
	return pid
}

// Whichever call of a spend the end of its ctx interrupts, the error must
// match context.Canceled and the context's cause, and match
// ErrUnknownOutcome exactly when the write was in flight: then, and only
// then, the spend may have landed.
func TestSpend_ctxEndsAnywhere(t *testing.T) {
	spends := []struct {
		name        string
		read, write string // SQL that reads and writes the balance
		readErr     string // how the error of the read begins
		readLocks   bool   // the read waits for a row lock
		inTx        bool   // the write is inside a transaction, the COMMIT follows
		spend       func(s *ledger.Store, ctx context.Context, id int64, work time.Duration) (bool, error)
	}{
		{
			name: "SpendFenced", read: "SET fence =", write: "AND fence =", readErr: "ledger: claim", readLocks: true,
			spend: func(s *ledger.Store, ctx context.Context, id int64, work time.Duration) (bool, error) {
				return s.SpendFenced(ctx, id, 1, 10, work)
			},
		},
		{
			name: "SpendVersioned", read: "SELECT balance, version", write: "AND version =", readErr: "ledger: read",
			spend: func(s *ledger.Store, ctx context.Context, id int64, work time.Duration) (bool, error) {
				ok, _, err := s.SpendVersioned(ctx, id, 10, work)
				return ok, err
			},
		},
		{
			name: "SpendForUpdate", read: "FOR UPDATE", write: "UPDATE walletlock_wallets", readErr: "ledger: spend from", readLocks: true, inTx: true,
			spend: func(s *ledger.Store, ctx context.Context, id int64, work time.Duration) (bool, error) {
				return s.SpendForUpdate(ctx, id, 10, work)
			},
		},
	}
	const (
		read, write, commit = "read", "write", "commit"
		beforeCall          = "before the call"
		afterRead           = "after the read"
	)
	moments := []struct {
		name string
		// The ctx ends in a hook on statement hook (at its start, or at its
		// end with atEnd), or when a statement waits for the row that a
		// stall locked (before the call, or once the read has returned).
		hook    string
		atEnd   bool
		stall   string
		work    time.Duration
		in      string // how the error begins, saying which call the end hit; "" for the read's
		unknown bool
	}{
		{name: "as the read is sent", hook: read},
		{name: "during the work", hook: read, atEnd: true, work: time.Hour, in: "wallet: stopped before the write"},
		{name: "as the write is sent", hook: write, in: "ledger: write"},
		{name: "as the COMMIT is sent", hook: commit, in: "postgres: write"},
		{name: "while the read waits for the row", stall: beforeCall},
		{name: "while the write waits for the row", stall: afterRead, in: "ledger: write", unknown: true},
	}
	for _, sp := range spends {
		for _, m := range moments {
			switch {
			case m.hook == commit && !sp.inTx, // no COMMIT
				m.stall == beforeCall && !sp.readLocks, // the read does not wait
				m.stall == afterRead && sp.inTx:        // the spend holds the row
				continue
			}
			t.Run(sp.name+"/"+m.name, func(t *testing.T) {
				h := &hook{}
				s, app := hookedStore(t, h)
				id := newWallet(t, s, 100)
				lost := errors.New("lease lost")
				ctx, cancel := context.WithCancelCause(testCtx(t))
				defer cancel(nil)

				var (
					release func() // set once a stall holds the row
					ready   = make(chan struct{})
					locked  = make(chan struct{})
				)
				switch {
				case m.hook != "":
					h.sql = map[string]string{read: sp.read, write: sp.write, commit: "commit"}[m.hook]
					h.atEnd, h.fn = m.atEnd, func() { cancel(lost) }
				case m.stall == beforeCall:
					release = stall(t, id)
				case m.stall == afterRead:
					// The hook only hands over to the test's goroutine,
					// where stall may fail the test, and waits for it.
					h.sql, h.atEnd, h.fn = sp.read, true, func() {
						close(ready)
						select {
						case <-locked:
						case <-ctx.Done():
						}
					}
				}
				type result struct {
					ok  bool
					err error
				}
				done := make(chan result, 1)
				go func() {
					ok, err := sp.spend(s, ctx, id, m.work)
					done <- result{ok, err}
				}()
				if m.stall == afterRead {
					select {
					case <-ready:
					case r := <-done:
						t.Fatalf("%s returned %v, %v before its read came back", sp.name, r.ok, r.err)
					}
					release = stall(t, id)
					close(locked)
				}
				if release != nil {
					waitFor(t, testCtx(t), func(context.Context) bool { return waiting(t, app) != 0 })
					cancel(lost)
				}
				r := <-done
				if release != nil {
					release()
				}

				if r.ok || !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, lost) {
					t.Fatalf("%s = %v, %v; want false, context.Canceled and the cause", sp.name, r.ok, r.err)
				}
				in := cmp.Or(m.in, sp.readErr)
				if sp.inTx && m.hook == write {
					in = sp.readErr // one call of the root's, read and write alike
				}
				if !strings.Contains(r.err.Error(), in) {
					t.Errorf("err = %v, want it to say %q: the end hit another call", r.err, in)
				}
				if got := errors.Is(r.err, wallet.ErrUnknownOutcome); got != m.unknown {
					t.Errorf("err = %v: matches ErrUnknownOutcome = %v, want %v", r.err, got, m.unknown)
				}
				bal, err := s.Balance(testCtx(t), id)
				if err != nil {
					t.Fatal(err)
				}
				unknown := 0
				if m.unknown {
					unknown = 1
				}
				if v := wallet.Check(100, 10, wallet.Tally{Unknown: unknown}, bal); !v.OK {
					t.Errorf("%s", v)
				}
			})
		}
	}
}

// Write's outcome is unknown exactly when its UPDATE was sent and no
// answer came back: a refusal by PostgreSQL and a ctx that had ended before
// the call are certain failures.
func TestWrite_unknownOutcome(t *testing.T) {
	s, app := hookedStore(t, &hook{})
	pool := testenv.Postgres(t)
	tests := []struct {
		name    string
		balance int64
		// during starts after the UPDATE waits for the row (the PID is
		// that of its backend) and makes it fail; nil for none.
		during  func(ctx context.Context, cancel context.CancelFunc, pid uint32) error
		before  bool // end ctx before the call
		unknown bool
	}{
		{name: "a check violation", balance: -1},
		{name: "ctx ended before the call", balance: 90, before: true},
		{name: "ctx ends while the UPDATE waits", balance: 90, unknown: true,
			during: func(_ context.Context, cancel context.CancelFunc, _ uint32) error { cancel(); return nil }},
		{name: "the backend is terminated while the UPDATE waits", balance: 90, unknown: true,
			during: func(ctx context.Context, _ context.CancelFunc, pid uint32) error {
				_, err := pool.Exec(ctx, "SELECT pg_terminate_backend($1)", pid)
				return err
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := newWallet(t, s, 100)
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			if tt.before {
				cancel()
			}
			release := func() {}
			if tt.during != nil {
				release = stall(t, id)
			}
			done := make(chan error, 1)
			go func() { done <- s.Write(ctx, id, tt.balance) }()
			if tt.during != nil {
				var pid uint32
				waitFor(t, testCtx(t), func(context.Context) bool { pid = waiting(t, app); return pid != 0 })
				if err := tt.during(testCtx(t), cancel, pid); err != nil {
					t.Fatal(err)
				}
			}
			err := <-done
			release()
			if err == nil {
				t.Fatal("Write succeeded")
			}
			if got := errors.Is(err, wallet.ErrUnknownOutcome); got != tt.unknown {
				t.Errorf("err = %v: matches ErrUnknownOutcome = %v, want %v", err, got, tt.unknown)
			}
		})
	}
}

// waitFor polls cond until it holds; the test's own deadline bounds it.
func waitFor(t *testing.T, ctx context.Context, cond func(context.Context) bool) {
	t.Helper()
	for !cond(ctx) {
		select {
		case <-ctx.Done():
			t.Fatal("condition never held")
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// hammer runs 20 spends of 10 on a wallet holding 100: exactly 10 may win.
func hammer(t *testing.T, s *ledger.Store, id int64, spend func() (bool, error)) {
	t.Helper()
	const n, initial, amount = 20, 100, 10
	tally := wallet.Hammer(n, spend)
	if len(tally.Errors) > 0 {
		t.Fatalf("errors: %v", tally.Errors)
	}
	bal, err := s.Balance(testCtx(t), id)
	if err != nil {
		t.Fatal(err)
	}
	v := wallet.Check(initial, amount, tally, bal)
	if !v.OK || tally.Accepted != initial/amount {
		t.Errorf("%s, want accepted=%d", v, initial/amount)
	}
}

func TestSpendVersioned_twentySpendersTenWin(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := newWallet(t, s, 100)
	var conflicts atomic.Int64
	hammer(t, s, id, func() (bool, error) {
		ok, c, err := s.SpendVersioned(ctx, id, 10, 2*time.Millisecond)
		conflicts.Add(int64(c))
		return ok, err
	})
	if conflicts.Load() == 0 {
		t.Error("no conflicts: the spenders never overlapped, so this test proved nothing")
	}
	t.Logf("conflicts: %d", conflicts.Load())
}

func TestSpendVersioned_ctxEnded(t *testing.T) {
	s, _ := openStore(t)
	id := newWallet(t, s, 100)
	ctx, cancel := context.WithCancel(testCtx(t))
	cancel()
	ok, _, err := s.SpendVersioned(ctx, id, 10, time.Millisecond)
	if ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("SpendVersioned = %v, %v; want false and context.Canceled", ok, err)
	}
	wantBalance(t, s, id, 100)
}

func TestSpendForUpdate_twentySpendersTenWin(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	id := newWallet(t, s, 100)
	hammer(t, s, id, func() (bool, error) {
		return s.SpendForUpdate(ctx, id, 10, 2*time.Millisecond)
	})
}

// The ctx is cancelled once the spender holds the row lock, right after
// its SELECT ... FOR UPDATE has returned, so it ends during the work. After
// the rollback the row must be unchanged and free for the next spender.
func TestSpendForUpdate_ctxEndsDuringWork(t *testing.T) {
	h := &hook{}
	s, _ := hookedStore(t, h)
	id := newWallet(t, s, 100)
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	h.sql, h.atEnd, h.fn = "FOR UPDATE", true, cancel
	if ok, err := s.SpendForUpdate(ctx, id, 10, time.Hour); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("SpendForUpdate = %v, %v; want false, context.Canceled", ok, err)
	}
	wantBalance(t, s, id, 100)
	// A bounded ctx: if the rollback had left the row locked, this would
	// fail instead of hanging.
	next, cancelNext := context.WithTimeout(testCtx(t), 10*time.Second)
	defer cancelNext()
	if ok, err := s.SpendForUpdate(next, id, 10, 0); !ok || err != nil {
		t.Fatalf("next SpendForUpdate = %v, %v; want true, nil", ok, err)
	}
	wantBalance(t, s, id, 90)
}

func TestStore_ranges(t *testing.T) {
	s, _ := openStore(t)
	ctx := testCtx(t)
	first := labtest.WalletID(t)
	const n = 3
	t.Cleanup(func() { s.DeleteRange(context.Background(), first, n) })

	if err := s.ResetRange(ctx, first, n, 100, nil); err != nil {
		t.Fatalf("ResetRange: %v", err)
	}
	// A reset puts a spent and claimed wallet back to its start.
	if _, err := s.Claim(ctx, first+1, 7); err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if err := s.WriteFenced(ctx, first+1, 7, 40); err != nil {
		t.Fatalf("WriteFenced: %v", err)
	}
	got, err := s.Balances(ctx, first, n)
	if err != nil || len(got) != n || got[0] != 100 || got[1] != 40 || got[2] != 100 {
		t.Fatalf("Balances = %v, %v; want [100 40 100]", got, err)
	}
	if err := s.ResetRange(ctx, first, n, 100, nil); err != nil {
		t.Fatalf("ResetRange again: %v", err)
	}
	if fence, err := s.Fence(ctx, first+1); err != nil || fence != 0 {
		t.Errorf("fence after a reset = %d, %v; want 0", fence, err)
	}

	if err := s.DeleteRange(ctx, first+2, 1); err != nil {
		t.Fatalf("DeleteRange: %v", err)
	}
	if _, err := s.Balances(ctx, first, n); !errors.Is(err, ledger.ErrNoWallet) {
		t.Errorf("Balances with one wallet gone: err = %v, want ErrNoWallet", err)
	}
}

func TestStore_runsNeverShareOrDeleteEachOthersRows(t *testing.T) {
	s, pool := openStore(t)
	ctx := testCtx(t)
	first := labtest.WalletID(t)
	const n = 3
	a, err := ledger.Open(ctx, pool, "test:run-a:")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ledger.Open(ctx, pool, "test:run-b:")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.DeleteRange(context.Background(), first, n) })

	if err := a.ResetRange(ctx, first, n, 100, nil); err != nil {
		t.Fatalf("a.ResetRange: %v", err)
	}
	err = b.ResetRange(ctx, first+2, n, 50, nil) // overlaps a's last wallet
	var owned *ledger.OwnedError
	if !errors.As(err, &owned) || !errors.Is(err, ledger.ErrOwned) || owned.ID != first+2 || owned.Owner != "test:run-a:" {
		t.Fatalf("b.ResetRange over a's rows: err = %v, want an *OwnedError for wallet %d of test:run-a:", err, first+2)
	}
	// The refused reset changed nothing, not even b's free rows.
	if _, err := s.Balance(ctx, first+3); !errors.Is(err, ledger.ErrNoWallet) {
		t.Errorf("wallet %d after the refused reset: err = %v, want ErrNoWallet", first+3, err)
	}
	if err := b.DeleteRange(ctx, first, n); err != nil {
		t.Fatalf("b.DeleteRange: %v", err)
	}
	if got, err := s.Balances(ctx, first, n); err != nil || len(got) != n {
		t.Fatalf("a's wallets after b's deletes: %v, %v; want all %d still there", got, err, n)
	}
	if err := a.DeleteRange(ctx, first, n); err != nil {
		t.Fatalf("a.DeleteRange: %v", err)
	}
	if _, err := s.Balance(ctx, first); !errors.Is(err, ledger.ErrNoWallet) {
		t.Errorf("after a's own delete: err = %v, want ErrNoWallet", err)
	}
}
