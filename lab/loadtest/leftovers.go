package loadtest

import (
	"fmt"
	"strings"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
)

// Leftovers is what a run could not delete (a frozen service, the time
// after Ctrl-C ran out, a lost run lease), and the commands that delete
// it. They name hosts and users, never a password.
type Leftovers struct {
	Redis    string `json:"redis,omitempty"`    // deletes the keys under the prefix
	Postgres string `json:"postgres,omitempty"` // deletes the rows the prefix owns
	Cause    string `json:"cause"`
}

// String is one line: what is left, why, and how to delete it.
func (l *Leftovers) String() string {
	var what, cmds []string
	if l.Redis != "" {
		what, cmds = append(what, "Redis keys"), append(cmds, l.Redis)
	}
	if l.Postgres != "" {
		what, cmds = append(what, "PostgreSQL rows"), append(cmds, l.Postgres)
	}
	return fmt.Sprintf("left %s behind (%s); delete them with: %s", strings.Join(what, " and "), l.Cause, strings.Join(cmds, " ; "))
}

// leftovers describes what is left under prefix, or returns nil when
// nothing is.
func leftovers(e *Env, prefix string, inRedis, inPostgres bool, cause error) *Leftovers {
	if !inRedis && !inPostgres {
		return nil
	}
	l := &Leftovers{Cause: strings.Join(strings.Fields(cause.Error()), " ")}
	if inRedis && e.Redis != nil {
		l.Redis = harness.RedisDelPrefix(env.OptionsOf(e.Redis), prefix)
	}
	if inPostgres && e.Postgres != nil {
		l.Postgres = harness.PostgresDeleteOwner(prefix)
	}
	return l
}
