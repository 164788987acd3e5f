package harness

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestPostgresDeleteOwner(t *testing.T) {
	t.Run("the default database, without its password", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "")
		got := PostgresDeleteOwner("walletlock:loadtest:")
		want := `psql 'postgres://walletlock@localhost:5432/walletlock?sslmode=disable' -c 'DELETE FROM walletlock_wallets WHERE owner = '\''walletlock:loadtest:'\'''`
		if got != want {
			t.Errorf("PostgresDeleteOwner = %q, want %q", got, want)
		}
	})
	t.Run("a database of the user's, by its variable", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "postgres://me:s3cret@db:5432/x")
		got := PostgresDeleteRange("o'brien:", 7, 2)
		if !strings.HasPrefix(got, `psql "$DATABASE_URL" -c `) || strings.Contains(got, "s3cret") {
			t.Errorf("PostgresDeleteRange = %q, want the variable, not the URL", got)
		}
	})
	// The SQL comes out of the shell as written, quotes doubled.
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	t.Setenv("DATABASE_URL", "postgres://me:s3cret@db:5432/x")
	_, quoted, _ := strings.Cut(PostgresDeleteRange("o'brien:", 7, 2), " -c ")
	out, err := exec.Command(sh, "-c", "printf %s "+quoted).Output()
	if want := "DELETE FROM walletlock_wallets WHERE owner = 'o''brien:' AND id BETWEEN 7 AND 8"; err != nil || string(out) != want {
		t.Errorf("the shell reads %q (%v), want %q", out, err, want)
	}
}

// Every command printed for pasting quotes what it names: pasted into a
// shell it passes the SQL through as written, runs nothing else, and the
// SQL matches the owner as it is, LIKE's wildcards included.
func TestPostgresDelete_quotesForShellAndSQL(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	t.Setenv("DATABASE_URL", "postgres://me:s3cret@db:5432/x")
	dir := t.TempDir()
	hostile := "walletlock:bob's:$(touch " + dir + "/ran)`touch " + dir + "/ran`\"_%!:"
	sql := `'walletlock:bob''s:$(touch ` + dir + "/ran)`touch " + dir + "/ran`\"_%!:'"
	tests := []struct {
		name, cmd, want string
	}{
		{"by an owner", PostgresDeleteOwner(hostile), "DELETE FROM walletlock_wallets WHERE owner = " + sql},
		{"by a range", PostgresDeleteRange(hostile, 7, 3), "DELETE FROM walletlock_wallets WHERE owner = " + sql + " AND id BETWEEN 7 AND 9"},
		{"by a prefix", PostgresDeletePrefix(hostile), "DELETE FROM walletlock_wallets WHERE owner LIKE " +
			strings.NewReplacer("_", "!_", "%", "!%", "!", "!!").Replace(strings.TrimSuffix(sql, "'")) + "%' ESCAPE '!'"},
		{"a plain prefix, _ escaped", PostgresDeletePrefix("walletlock:a_b:"), `DELETE FROM walletlock_wallets WHERE owner LIKE 'walletlock:a!_b:%' ESCAPE '!'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, quoted, ok := strings.Cut(tt.cmd, " -c ")
			if !ok || !strings.HasPrefix(tt.cmd, `psql "$DATABASE_URL" -c `) {
				t.Fatalf("command %q, want psql \"$DATABASE_URL\" -c ...", tt.cmd)
			}
			out, err := exec.Command(sh, "-c", "printf %s "+quoted).Output()
			if err != nil || string(out) != tt.want {
				t.Errorf("the shell reads\n%s (%v), want\n%s", out, err, tt.want)
			}
			if _, err := os.Stat(dir + "/ran"); err == nil {
				t.Errorf("pasting %q ran a command", tt.cmd)
			}
		})
	}
}
