package judge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Mutant is the root's lock with one mistake in it, the kind users make:
// one change, written here as a patch that the judge applies to a
// temporary copy of the root's lock/ when it builds the mutant (so no
// second copy of lock.go lives in the repo), and the property the mistake
// breaks.
type Mutant struct {
	Name     string
	Mistake  string // what the change does, in words
	Property string // the id of the property it fails
	File     string // in lock/
	Old, New string // File's text Old (found exactly once) becomes New
	// ServerArgs, for a mistake in the server rather than the code.
	ServerArgs []string
}

// Mutants are the mistakes, one row each in the matrix.
var Mutants = []Mutant{
	{Name: "release-cancelled", Property: "release-own",
		Mistake: "Release is sent on a context already cancelled, as `defer l.Release(ctx)` does when ctx is the work's and the work timed out: the release never reaches Redis, and the key stays until its TTL",
		File:    "lock.go",
		Old:     "func (l *Lock) Release(ctx context.Context) error {\n",
		New:     "func (l *Lock) Release(ctx context.Context) error {\n\tctx, cancel := context.WithCancel(ctx)\n\tcancel() // the work's context, done by the time the work is\n"},
	{Name: "setnx-expire", Property: "killed-frees",
		Mistake: "SETNX, then EXPIRE, as two commands: a holder that crashes between them leaves a lock that never expires",
		File:    "lock.go",
		Old:     "ok, err := rdb.SetNX(ctx, key, token, ttl).Result() // SET key token NX PX ttl\n",
		New: "ok, err := rdb.SetNX(ctx, key, token, 0).Result() // SETNX key token, no expiry yet\n" +
			"\t\tif ok { // then PEXPIRE key ttl: a second command\n" +
			"\t\t\terr = rdb.Eval(ctx, \"return redis.call('PEXPIRE', KEYS[1], ARGV[1])\", []string{key}, ttl.Milliseconds()).Err()\n\t\t}\n"},
	{Name: "del-no-token", Property: "release-own",
		Mistake: "Release deletes the key without checking the token: a holder whose lease expired deletes the next holder's lock",
		File:    "release.lua",
		Old:     "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"DEL\", KEYS[1])\nend\nreturn 0",
		New:     "return redis.call(\"DEL\", KEYS[1])"},
	{Name: "lost-reply-not-held", Property: "lost-reply",
		Mistake: "a release whose reply was lost is read as \"not held\": the caller believes its lease had lapsed, when nobody knows",
		File:    "lock.go",
		Old:     "return fmt.Errorf(\"lock: release %s: %w\", l.Key, err)",
		New:     "return ErrNotHeld // no reply: read as not held"},
	{Name: "refresh-recreates", Property: "refresh-own",
		Mistake: "Refresh sets the key again without checking it is still ours: a lease that expired comes back, over the next holder's",
		File:    "refresh.lua",
		Old:     "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\nend\nreturn 0",
		New:     "redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2])\nreturn 1"},
	{Name: "forgetful-redis", Property: "restart-keeps",
		Mistake:    "the lock's code is unchanged; its Redis runs with appendonly no, so a restart forgets every lease while its holder still works. The code cannot see a restart: the one line that decides whether a lease outlives one is the server's persistence",
		ServerArgs: []string{"--appendonly", "no"}},
	{Name: "ttl-zero", Property: "ttl-refused",
		Mistake: "Acquire lets a TTL of 0 through: go-redis sends SET NX with no expiry, a lock that never ends if its holder dies",
		File:    "lock.go",
		Old:     "\tif ttl < time.Millisecond {\n\t\treturn nil, ErrBadTTL\n\t}\n\ttoken := rand.Text() // 26",
		New:     "\tif ttl < 0 {\n\t\treturn nil, ErrBadTTL\n\t}\n\ttoken := rand.Text() // 26"},
}

// MutantNamed finds a mutant by name.
func MutantNamed(name string) (Mutant, bool) {
	for _, m := range Mutants {
		if m.Name == name {
			return m, true
		}
	}
	return Mutant{}, false
}

// MutantNames lists the mutants' names.
func MutantNames() string {
	var n []string
	for _, m := range Mutants {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

// BuildMutant makes the judging program of mutant m: the root's lock/
// (from root, the repo) copied into a temporary module, with m's change.
func BuildMutant(ctx context.Context, root string, m Mutant) (*Built, error) {
	src := filepath.Join(root, "lock")
	var pkg string
	prepare := func(tmp string) error {
		pkg = filepath.Join(tmp, "lock")
		if err := os.MkdirAll(pkg, 0o755); err != nil {
			return err
		}
		entries, err := os.ReadDir(src)
		if err != nil {
			return fmt.Errorf("judge: the root's lock/: %w", err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), "_test.go") || e.IsDir() {
				continue
			}
			raw, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				return err
			}
			text := string(raw)
			if e.Name() == m.File {
				if n := strings.Count(text, m.Old); n != 1 {
					return fmt.Errorf("judge: mutant %s: lock/%s holds its text %d times, want once: has lock/ changed?", m.Name, m.File, n)
				}
				text = strings.Replace(text, m.Old, m.New, 1)
			}
			if err := os.WriteFile(filepath.Join(pkg, e.Name()), []byte(text), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	// The package is read from the root's lock/ (the same API), built from
	// the copy.
	return build(ctx, root, "mutant:"+m.Name, "judgeexec/lock", src, nil, m.ServerArgs, prepare)
}
