package lockbuild

// Mutants and variants of the root's lock: each one change, written here
// as edits that the judge applies to a temporary copy of the root's lock/
// when it builds it (so no second copy of lock.go lives in the repo). A
// mutant is a mistake users make, and must fail the property it breaks; a
// variant is the lock written correctly another way, and must fail
// nothing.

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Mutant is one change of the root's lock.
type Mutant struct {
	Name     string
	Mistake  string // what the change does, in words
	Property string // the id of the property it fails; "" for a variant, which fails none
	edits    []edit
	// ServerArgs, for a mistake in the server rather than the code.
	ServerArgs []string
}

// edit turns the text old of lock/file, found exactly once, into new.
type edit struct{ file, old, new string }

// wider widens lock.Client to all of go-redis's commands, for a change
// that sends GET, DEL, INCR, PEXPIRE or WATCH itself: the one step a
// learner who writes them takes first.
var wider = edit{"lock.go",
	"type Client interface {\n\tredis.Scripter\n\tSetNX(ctx context.Context, key string, value any, ttl time.Duration) *redis.BoolCmd\n}",
	"type Client interface {\n\tredis.Cmdable // widened: GET, DEL, INCR, PEXPIRE, MULTI\n\tWatch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error\n}"}

const releaseBody = "\tn, err := releaseScript.Run(ctx, l.rdb, []string{l.Key}, l.Token).Int()\n\tif err != nil {\n\t\treturn fmt.Errorf(\"lock: release %s: %w\", l.Key, err)\n\t}\n\tif n == 0 {\n\t\treturn ErrNotHeld\n\t}\n\treturn nil\n"

const refreshBody = "\tn, err := refreshScript.Run(ctx, l.rdb, []string{l.Key}, l.Token, ttl.Milliseconds()).Int()\n\tif err != nil {\n\t\treturn fmt.Errorf(\"lock: refresh %s: %w\", l.Key, err)\n\t}\n\tif n == 0 {\n\t\treturn ErrNotHeld\n\t}\n\treturn nil\n"

const fencedTry = "\t\tfence, err := acquireFencedScript.Run(ctx, rdb, []string{key, fenceKey}, token, ttl.Milliseconds()).Int64()\n\t\tif err != nil {\n\t\t\treturn nil, failed(ctx, key, err)\n\t\t}\n\t\tif fence > 0 {\n\t\t\treturn &Lock{rdb: rdb, Key: key, Token: token, Fence: fence}, nil\n\t\t}\n"

// Mutants are the mistakes and the variants, one row each in the matrix.
var Mutants = []Mutant{
	{Name: "release-cancelled", Property: "release-own",
		Mistake: "Release is sent on a context already cancelled, as `defer l.Release(ctx)` does when ctx is the work's and the work timed out: the release never reaches Redis, and the key stays until its TTL",
		edits: []edit{{"lock.go", "func (l *Lock) Release(ctx context.Context) error {\n",
			"func (l *Lock) Release(ctx context.Context) error {\n\tctx, cancel := context.WithCancel(ctx)\n\tcancel() // the work's context, done by the time the work is\n"}}},
	{Name: "setnx-expire", Property: "killed-frees",
		Mistake: "SETNX, then EXPIRE, as two commands: a holder that crashes between them leaves a lock that never expires",
		edits: []edit{{"lock.go", "ok, err := rdb.SetNX(ctx, key, token, ttl).Result() // SET key token NX PX ttl\n",
			"ok, err := rdb.SetNX(ctx, key, token, 0).Result() // SETNX key token, no expiry yet\n" +
				"\t\tif ok { // then PEXPIRE key ttl: a second command\n" +
				"\t\t\terr = rdb.Eval(ctx, \"return redis.call('PEXPIRE', KEYS[1], ARGV[1])\", []string{key}, ttl.Milliseconds()).Err()\n\t\t}\n"}}},
	{Name: "del-no-token", Property: "release-own",
		Mistake: "Release deletes the key without checking the token: a holder whose lease expired deletes the next holder's lock",
		edits: []edit{{"release.lua", "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"DEL\", KEYS[1])\nend\nreturn 0",
			"return redis.call(\"DEL\", KEYS[1])"}}},
	{Name: "release-get-del", Property: "release-own",
		Mistake: "Release as GET, compare the token in Go, then DEL: two commands, so a holder that stops between them, past its TTL, deletes the next holder's lease",
		edits: []edit{wider, {"lock.go", releaseBody,
			"\tgot, err := l.rdb.Get(ctx, l.Key).Result() // GET, then compare in Go\n\tif err != nil && err != redis.Nil {\n\t\treturn fmt.Errorf(\"lock: release %s: %w\", l.Key, err)\n\t}\n\tif got != l.Token {\n\t\treturn ErrNotHeld\n\t}\n" +
				"\tif err := l.rdb.Del(ctx, l.Key).Err(); err != nil { // then DEL: a second command\n\t\treturn fmt.Errorf(\"lock: release %s: %w\", l.Key, err)\n\t}\n\treturn nil\n"}}},
	{Name: "lost-reply-not-held", Property: "lost-reply",
		Mistake: "a release whose reply was lost is read as \"not held\": the caller believes its lease had lapsed, when nobody knows",
		edits:   []edit{{"lock.go", "return fmt.Errorf(\"lock: release %s: %w\", l.Key, err)", "return ErrNotHeld // no reply: read as not held"}}},
	{Name: "refresh-recreates", Property: "refresh-own",
		Mistake: "Refresh sets the key again without checking it is still ours: a lease that expired comes back, over the next holder's",
		edits: []edit{{"refresh.lua", "if redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n  return redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\nend\nreturn 0",
			"redis.call(\"SET\", KEYS[1], ARGV[1], \"PX\", ARGV[2])\nreturn 1"}}},
	{Name: "refresh-get-pexpire", Property: "refresh-own",
		Mistake: "Refresh as GET, compare the token in Go, then PEXPIRE: two commands, so a holder that stops between them, past its TTL, sets the TTL of the next holder's lease",
		edits: []edit{wider, {"watch.go", refreshBody,
			"\tgot, err := l.rdb.Get(ctx, l.Key).Result() // GET, then compare in Go\n\tif err != nil && err != redis.Nil {\n\t\treturn fmt.Errorf(\"lock: refresh %s: %w\", l.Key, err)\n\t}\n\tif got != l.Token {\n\t\treturn ErrNotHeld\n\t}\n" +
				"\tif err := l.rdb.PExpire(ctx, l.Key, ttl).Err(); err != nil { // then PEXPIRE: a second command\n\t\treturn fmt.Errorf(\"lock: refresh %s: %w\", l.Key, err)\n\t}\n\treturn nil\n"}}},
	{Name: "fenced-set-incr", Property: "stale-write",
		Mistake: "AcquireFenced as SET NX, then INCR: two commands, so a holder that stops between them, past its TTL, comes back with a fence above the live holder's",
		edits: []edit{wider, {"fence.go", fencedTry,
			"\t\tok, err := rdb.SetNX(ctx, key, token, ttl).Result() // SET NX PX: the lock\n\t\tif err != nil {\n\t\t\treturn nil, failed(ctx, key, err)\n\t\t}\n" +
				"\t\tif ok {\n\t\t\tfence, err := rdb.Incr(ctx, fenceKey).Result() // then INCR: the fence, a second command\n\t\t\tif err != nil {\n\t\t\t\treturn nil, failed(ctx, key, err)\n\t\t\t}\n" +
				"\t\t\treturn &Lock{rdb: rdb, Key: key, Token: token, Fence: fence}, nil\n\t\t}\n"}}},
	{Name: "fenced-incr-set", Property: "fences-increase",
		Mistake: "AcquireFenced as INCR, then SET NX: two commands, so a holder that stops between them takes the lock with a fence below the last holder's",
		edits: []edit{wider, {"fence.go", fencedTry,
			"\t\tfence, err := rdb.Incr(ctx, fenceKey).Result() // INCR: the fence first\n\t\tif err != nil {\n\t\t\treturn nil, failed(ctx, key, err)\n\t\t}\n" +
				"\t\tok, err := rdb.SetNX(ctx, key, token, ttl).Result() // then SET NX PX: the lock, a second command\n\t\tif err != nil {\n\t\t\treturn nil, failed(ctx, key, err)\n\t\t}\n" +
				"\t\tif ok {\n\t\t\treturn &Lock{rdb: rdb, Key: key, Token: token, Fence: fence}, nil\n\t\t}\n"}}},
	{Name: "forgetful-redis", Property: "restart-keeps",
		Mistake:    "the lock's code is unchanged; its Redis runs with appendonly no, so a restart forgets every lease while its holder still works. The code cannot see a restart: the one line that decides whether a lease outlives one is the server's persistence",
		ServerArgs: []string{"--appendonly", "no"}},
	{Name: "ttl-zero", Property: "ttl-refused",
		Mistake: "Acquire lets a TTL of 0 through: go-redis sends SET NX with no expiry, a lock that never ends if its holder dies",
		edits: []edit{{"lock.go", "\tif ttl < time.Millisecond {\n\t\treturn nil, ErrBadTTL\n\t}\n\ttoken := rand.Text() // 26",
			"\tif ttl < 0 {\n\t\treturn nil, ErrBadTTL\n\t}\n\ttoken := rand.Text() // 26"}}},

	// Variants: correct, written another way; they fail nothing.
	{Name: "release-watch",
		Mistake: "Release with WATCH, GET, MULTI, DEL, EXEC: a check and an act in separate commands, made safe by WATCH, so that EXEC fails when the key changed meanwhile",
		edits: []edit{wider, {"lock.go", releaseBody,
			"\terr := l.rdb.Watch(ctx, func(tx *redis.Tx) error {\n\t\tgot, err := tx.Get(ctx, l.Key).Result()\n\t\tif err == redis.Nil || err == nil && got != l.Token {\n\t\t\treturn ErrNotHeld\n\t\t}\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n" +
				"\t\t_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.Del(ctx, l.Key).Err() })\n\t\treturn err\n\t}, l.Key)\n" +
				"\tif err == redis.TxFailedErr { // the key changed after WATCH: it is another's now\n\t\treturn ErrNotHeld\n\t}\n\tif err != nil && err != ErrNotHeld {\n\t\treturn fmt.Errorf(\"lock: release %s: %w\", l.Key, err)\n\t}\n\treturn err\n"}}},
	{Name: "refresh-watch",
		Mistake: "Refresh with WATCH, GET, MULTI, PEXPIRE, EXEC: EXEC fails when the key changed after WATCH",
		edits: []edit{wider, {"watch.go", refreshBody,
			"\terr := l.rdb.Watch(ctx, func(tx *redis.Tx) error {\n\t\tgot, err := tx.Get(ctx, l.Key).Result()\n\t\tif err == redis.Nil || err == nil && got != l.Token {\n\t\t\treturn ErrNotHeld\n\t\t}\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n" +
				"\t\t_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error { return p.PExpire(ctx, l.Key, ttl).Err() })\n\t\treturn err\n\t}, l.Key)\n" +
				"\tif err == redis.TxFailedErr {\n\t\treturn ErrNotHeld\n\t}\n\tif err != nil && err != ErrNotHeld {\n\t\treturn fmt.Errorf(\"lock: refresh %s: %w\", l.Key, err)\n\t}\n\treturn err\n"}}},
	{Name: "fenced-multi",
		Mistake: "AcquireFenced with MULTI, SET NX PX, INCR, EXEC: the lock and the fence in one transaction instead of one script (a try that fails the SET draws a fence nobody uses, which is harmless)",
		edits: []edit{wider, {"fence.go", fencedTry,
			"\t\tcmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {\n\t\t\tp.SetNX(ctx, key, token, ttl)\n\t\t\tp.Incr(ctx, fenceKey)\n\t\t\treturn nil\n\t\t})\n" +
				"\t\tif err != nil && err != redis.Nil {\n\t\t\treturn nil, failed(ctx, key, err)\n\t\t}\n" +
				"\t\tif cmds[0].(*redis.BoolCmd).Val() {\n\t\t\treturn &Lock{rdb: rdb, Key: key, Token: token, Fence: cmds[1].(*redis.IntCmd).Val()}, nil\n\t\t}\n"}}},
}

// MutantNamed finds a mutant or variant by name.
func MutantNamed(name string) (Mutant, bool) {
	i := slices.IndexFunc(Mutants, func(m Mutant) bool { return m.Name == name })
	if i < 0 {
		return Mutant{}, false
	}
	return Mutants[i], true
}

// MutantNames lists the names.
func MutantNames() string {
	var n []string
	for _, m := range Mutants {
		n = append(n, m.Name)
	}
	return strings.Join(n, ", ")
}

// BuildMutant makes the judging program of m: the root's lock/ (from
// root, the repo) copied into a temporary module, with m's edits.
func BuildMutant(ctx context.Context, root string, m Mutant) (*Built, error) {
	files, err := readFiles(filepath.Join(root, "lock"))
	if err != nil {
		return nil, fmt.Errorf("judge: the root's lock/: %w", err)
	}
	for _, ed := range m.edits {
		if n := strings.Count(files[ed.file], ed.old); n != 1 {
			return nil, fmt.Errorf("judge: mutant %s: lock/%s holds its text %d times, want once: has lock/ changed?", m.Name, ed.file, n)
		}
		files[ed.file] = strings.Replace(files[ed.file], ed.old, ed.new, 1)
	}
	return build(ctx, root, "mutant:"+m.Name, files, nil, m.ServerArgs)
}
