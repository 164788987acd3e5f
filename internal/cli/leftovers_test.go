package cli

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/wallet"
)

func TestRedisDel(t *testing.T) {
	tests := []struct {
		name string
		opt  redis.Options
		want string
	}{
		{"the default server", redis.Options{Addr: wallet.DefaultRedisAddr},
			"redis-cli del 'p:balance:{wallet:42}' p:run"},
		{"another address", redis.Options{Addr: "127.0.0.1:16379"},
			"redis-cli -h 127.0.0.1 -p 16379 del 'p:balance:{wallet:42}' p:run"},
		// The password stays in the variable, never on the screen.
		{"a password", redis.Options{Addr: "cache:6380", Password: "s3cret"},
			`redis-cli -u "$REDIS_URL" del 'p:balance:{wallet:42}' p:run`},
		{"a database", redis.Options{Addr: wallet.DefaultRedisAddr, DB: 3},
			`redis-cli -u "$REDIS_URL" del 'p:balance:{wallet:42}' p:run`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedisDel(&tt.opt, "p:balance:{wallet:42}", "p:run"); got != tt.want {
				t.Errorf("RedisDel = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPostgresDelete(t *testing.T) {
	t.Run("the default database, without its password", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "")
		want := `psql 'postgres://walletlock@localhost:5432/walletlock?sslmode=disable' -c "DELETE FROM walletlock_wallets WHERE owner = 'walletlock:demo:step5:' AND id IN (42)"`
		if got := PostgresDelete("walletlock:demo:step5:", 42); got != want {
			t.Errorf("PostgresDelete = %q, want %q", got, want)
		}
	})
	t.Run("a database of the user's, by its variable", func(t *testing.T) {
		t.Setenv("DATABASE_URL", "postgres://me:s3cret@db:5432/x")
		got := PostgresDelete("o'brien:", 7, 8)
		want := `psql "$DATABASE_URL" -c "DELETE FROM walletlock_wallets WHERE owner = 'o''brien:' AND id IN (7, 8)"`
		if got != want || strings.Contains(got, "s3cret") {
			t.Errorf("PostgresDelete = %q, want %q", got, want)
		}
	})
}

// What ShellQuote quotes, a shell reads back unchanged.
func TestShellQuote(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{
		"plain", "walletlock:demo:step4:", "lock:{wallet:42}", "two words", "",
		"it's", "owner = 'x'", `a "quoted" $HOME and 'both'`, "back\\slash`cmd`!",
	} {
		out, err := exec.Command(sh, "-c", "printf %s "+ShellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("sh read %s back as %q (%v), want %q", ShellQuote(s), out, err, s)
		}
	}
}
