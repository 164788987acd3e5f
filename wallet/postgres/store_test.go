package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/wallet"
	"example.com/walletlock/wallet/postgres"
)

// store is a Store of the test's own, whose rows are deleted when it ends.
func store(t *testing.T) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(t.Context(), testenv.Postgres(t), "test:"+t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // t.Context() is cancelled before cleanups run
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Clear(ctx); err != nil {
			t.Errorf("delete the test's rows: %v", err)
		}
	})
	return s
}

// id is a wallet number no other test uses.
func id(t *testing.T) int64 { return 1<<50 + time.Now().UnixNano()%(1<<40) }

// A claim on read moves the row to the new fence: the older holder's
// write, computed from its own stale read, is refused.
func TestClaim_shutsOutAnOlderFence(t *testing.T) {
	s, w, ctx := store(t), id(t), t.Context()
	if err := s.Reset(ctx, w, 100); err != nil {
		t.Fatal(err)
	}
	readA, err := s.Claim(ctx, w, 1) // A reads, then pauses
	if err != nil {
		t.Fatal(err)
	}
	readB, err := s.Claim(ctx, w, 2) // B reads
	if err != nil {
		t.Fatal(err)
	}
	if err := s.WriteFenced(ctx, w, 1, readA-10); !errors.Is(err, postgres.ErrStale) {
		t.Errorf("A's write with fence 1 = %v, want ErrStale", err)
	}
	if err := s.WriteFenced(ctx, w, 2, readB-10); err != nil {
		t.Errorf("B's write with fence 2 = %v", err)
	}
	if _, err := s.Claim(ctx, w, 2); !errors.Is(err, postgres.ErrStale) {
		t.Errorf("a second claim with fence 2 = %v, want ErrStale: a fence claims once", err)
	}
	if got, _ := s.Balance(ctx, w); got != 90 {
		t.Errorf("balance = %d, want 90", got)
	}
}

// The fence checked at the write alone loses a spend when A writes between
// B's read and B's write: each write carries a higher fence than the row.
func TestWriteFencedOnly_losesASpend(t *testing.T) {
	s, w, ctx := store(t), id(t), t.Context()
	if err := s.Reset(ctx, w, 100); err != nil {
		t.Fatal(err)
	}
	readA, _ := s.Balance(ctx, w)
	readB, _ := s.Balance(ctx, w)
	if err := s.WriteFencedOnly(ctx, w, 1, readA-10); err != nil {
		t.Fatalf("A's write = %v", err)
	}
	if err := s.WriteFencedOnly(ctx, w, 2, readB-10); err != nil {
		t.Fatalf("B's write = %v", err)
	}
	if got, _ := s.Balance(ctx, w); got != 90 {
		t.Errorf("balance after two spends of 10 = %d, want 90: one spend lost, the lesson", got)
	}
	if err := s.WriteFencedOnly(ctx, w, 1, 0); !errors.Is(err, postgres.ErrStale) {
		t.Errorf("a write with fence 1 after fence 2 = %v, want ErrStale", err)
	}
}

// With no lock, fifty spends at once through a version column, or a row
// lock, keep every spend: ten go through and the balance ends at 0.
func TestSpends_withoutALockKeepTheBalanceRight(t *testing.T) {
	s := store(t)
	for name, spend := range map[string]func(int64) (bool, error){
		"versioned":  func(w int64) (bool, error) { return s.SpendVersioned(t.Context(), w, 10, time.Millisecond) },
		"for update": func(w int64) (bool, error) { return s.SpendForUpdate(t.Context(), w, 10, time.Millisecond) },
	} {
		w := id(t)
		if err := s.Reset(t.Context(), w, 100); err != nil {
			t.Fatal(err)
		}
		tally := wallet.Hammer(50, func() (bool, error) { return spend(w) })
		balance, err := s.Balance(t.Context(), w)
		if v := wallet.Check(100, 10, tally, balance); err != nil || !v.OK || v.Accepted != 10 {
			t.Errorf("%s: %s (%v), want accepted=10 balance=0 OK", name, v, err)
		}
	}
}

// A run resets only rows of its own: another owner's row is refused.
func TestReset_refusesAnotherOwnersRow(t *testing.T) {
	mine, w := store(t), id(t)
	if err := mine.Reset(t.Context(), w, 100); err != nil {
		t.Fatal(err)
	}
	theirs, err := postgres.Open(t.Context(), testenv.Postgres(t), "test:another-run")
	if err != nil {
		t.Fatal(err)
	}
	if err := theirs.Reset(t.Context(), w, 5); err == nil || !strings.Contains(err.Error(), "another run") {
		t.Errorf("Reset of another owner's row = %v, want a refusal", err)
	}
	if got, _ := mine.Balance(t.Context(), w); got != 100 {
		t.Errorf("balance = %d, want 100 untouched", got)
	}
}

// An overdraft is refused by the table's CHECK, whatever the caller does,
// and that refusal is a known failure, not an unknown outcome.
func TestWrite_refusesAnOverdraft(t *testing.T) {
	s, w := store(t), id(t)
	if err := s.Reset(t.Context(), w, 100); err != nil {
		t.Fatal(err)
	}
	err := s.Write(t.Context(), w, -10)
	if err == nil || errors.Is(err, wallet.ErrUnknownOutcome) {
		t.Errorf("Write(-10) = %v, want PostgreSQL's refusal", err)
	}
}

// A wrong DATABASE_URL is one line that says what to do, and never shows
// a piece of the password; a server that answered is not asked whether it
// runs.
func TestConnect_saysWhatIsWrongAndNeverThePassword(t *testing.T) {
	real := testenv.Postgres(t).Config().ConnConfig // it runs, and wants a password
	there := fmt.Sprintf("%s:%d/%s?sslmode=disable", real.Host, real.Port, real.Database)
	for _, tt := range []struct {
		name, url string
		wantParts []string
	}{
		{"nothing answers", "postgres://walletlock:s3cret@127.0.0.1:1/walletlock?sslmode=disable", []string{"is it running?", "DATABASE_URL"}},
		{"not a URL", "postgres://walletlock:s3cret@host:po rt/walletlock", []string{"DATABASE_URL is not valid"}},
		{"an @ in the password", "postgres://walletlock:s3cr@tPass@" + there, []string{"DATABASE_URL has more than one @", "%40"}},
		{"a # in the password", "postgres://walletlock:s3cr#tPass@" + there, []string{"DATABASE_URL", "%23"}},
		{"a wrong password", "postgres://walletlock:s3cretPass@" + there, []string{"refused the user and password", "28P01", "DATABASE_URL"}},
		{"the password written as the user", "postgres://s3cretPass@" + there, []string{"refused the user and password", "DATABASE_URL"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("DATABASE_URL", tt.url)
			pool, err := postgres.Connect(t.Context())
			if err == nil {
				pool.Close()
			}
			testenv.Refused(t, err, tt.wantParts...)
			if strings.Contains(tt.name, "password") && strings.Contains(err.Error(), "is it running?") {
				t.Errorf("error %q asks whether the server runs: it answered, or was never asked", err)
			}
		})
	}
}
