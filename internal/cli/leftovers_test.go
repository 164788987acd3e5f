package cli

import (
	"os/exec"
	"strings"
	"testing"
)

func TestPostgresDelete(t *testing.T) {
	t.Run("the default database, without its password", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "")
		got := PostgresDelete("walletlock:demo:step5:", 42)
		want := `psql 'postgres://walletlock@localhost:5432/walletlock?sslmode=disable' -c 'DELETE FROM walletlock_wallets WHERE owner = '\''walletlock:demo:step5:'\'' AND id IN (42)'`
		if got != want {
			t.Errorf("PostgresDelete = %q, want %q", got, want)
		}
	})
	t.Run("a database of the user's, by its variable", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "postgres://me:s3cret@db:5432/x")
		got := PostgresDelete("o'brien:", 7, 8)
		if !strings.HasPrefix(got, `psql "$DATABASE_URL" -c `) || strings.Contains(got, "s3cret") {
			t.Errorf("PostgresDelete = %q, want the variable, not the URL", got)
		}
	})
	// The SQL comes out of the shell as written, quotes doubled.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	t.Setenv("DATABASE_URL", "postgres://me:s3cret@db:5432/x")
	_, quoted, _ := strings.Cut(PostgresDelete("o'brien:", 7, 8), " -c ")
	out, err := exec.Command(sh, "-c", "printf %s "+quoted).Output()
	if want := "DELETE FROM walletlock_wallets WHERE owner = 'o''brien:' AND id IN (7, 8)"; err != nil || string(out) != want {
		t.Errorf("the shell reads %q (%v), want %q", out, err, want)
	}
}
