package wire

import (
	"strings"
	"testing"
)

func TestCommand_String(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"set with a token", []string{"SET", "lock:1", "3f9a1c2e77", "px", "500", "nx"}, "SET lock:1 … PX 500 NX"},
		{"evalsha", []string{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "lock:1", "tok"}, "EVALSHA on lock:1"},
		{"eval", []string{"EVAL", "return redis.call('DEL', KEYS[1])", "2", "lock:1", "fence:1"}, "EVAL on lock:1"},
		{"fcall", []string{"FCALL", "release", "1", "lock:1", "tok"}, "FCALL on lock:1"},
		{"eval without keys", []string{"EVAL", "return 1", "0"}, "EVAL"},
		{"get", []string{"GET", "lock:1"}, "GET lock:1"},
		{"exec", []string{"EXEC"}, "EXEC"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Command{Name: tt.args[0], Args: tt.args[1:]}
			if got := c.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRedact_passwords(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"acl setuser", []string{"ACL", "SETUSER", "bob", "on", ">secret", "#5e88", "~*"}, "SETUSER bob on … … ~*"},
		{"config set", []string{"CONFIG", "SET", "requirepass", "secret", "maxmemory", "1mb"}, "SET requirepass … maxmemory 1mb"},
		{"config set masterauth", []string{"CONFIG", "set", "masterauth", "secret"}, "set masterauth …"},
		{"migrate auth", []string{"MIGRATE", "h", "1", "k", "0", "5", "AUTH", "secret"}, "h 1 k 0 5 AUTH …"},
		{"migrate auth2", []string{"MIGRATE", "h", "1", "k", "0", "5", "AUTH2", "bob", "secret", "KEYS"}, "h 1 k 0 5 AUTH2 bob … KEYS"},
		{"migrate auth at the end", []string{"MIGRATE", "h", "1", "k", "0", "5", "AUTH"}, "h 1 k 0 5 AUTH"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args[1:]
			redact(tt.args[0], args)
			if got := strings.Join(args, " "); got != tt.want {
				t.Errorf("redact = %q, want %q", got, tt.want)
			}
		})
	}
}
