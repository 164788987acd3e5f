package judge

// The likely mistake behind a failure, and its fix: one clause each,
// read from what the judge saw on the wire where it can.

import (
	"slices"
	"strings"

	"example.com/walletlock/lab/internal/wire"
)

// checkThenAct is the mistake of an operation that broke at a pause
// point: a check and an act in two commands.
func checkThenAct(op string, cmds []wire.Command) string {
	has := func(name ...string) bool {
		for _, n := range name {
			if !slices.ContainsFunc(cmds, func(c wire.Command) bool { return c.Name == n }) {
				return false
			}
		}
		return true
	}
	before := func(a, b string) bool {
		i := slices.IndexFunc(cmds, func(c wire.Command) bool { return c.Name == a })
		j := slices.IndexFunc(cmds, func(c wire.Command) bool { return c.Name == b })
		return i >= 0 && j > i
	}
	switch {
	case op == "Release" && has("GET", "DEL"):
		return "Release checked the token (GET) and deleted the key (DEL) in two commands, so a holder that stops between them deletes the next holder's lease: compare and delete in one script (release.lua), or DELEX key IFEQ token on Redis 8.4"
	case op == "Refresh" && has("GET") && (has("PEXPIRE") || has("EXPIRE") || has("SET")):
		return "Refresh checked the token (GET) and set the TTL in another command, so a holder that stops between them sets the TTL of the next holder's lease: check and extend in one script (refresh.lua)"
	case op == "AcquireFenced" && before("SET", "INCR"):
		return "AcquireFenced took the lock (SET NX) and drew the fence (INCR) in two commands, so a holder that stops between them draws its fence after its lease ran out, above the live holder's: take the lock and the fence in one script (acquire_fenced.lua)"
	case op == "AcquireFenced" && before("INCR", "SET"):
		return "AcquireFenced drew the fence (INCR) before it took the lock (SET NX), in two commands, so a holder that stops between them takes the lock with a fence below the last holder's: take the lock and the fence in one script (acquire_fenced.lua)"
	case op == "Acquire" && before("GET", "SET") || before("EXISTS", "SET"):
		return "Acquire checked that the key was free and then set it, in two commands, so a holder that stops between them overwrites the lease someone took meanwhile: take the lock with one SET key token NX PX ttl"
	}
	return op + " checked and acted in separate commands (" + names(cmds) + "), so a holder that stops between them acts on what it saw before its lease ran out: do the check and the act in one script (EVAL), or in WATCH ... MULTI ... EXEC, which fails when the key changed"
}

// crashFix is the likely fix of a holder that died or did not return.
func crashFix(err string) string {
	switch {
	case strings.Contains(err, "nil pointer dereference"):
		return "a nil pointer in the lock: a call that returns no error must return a lease, and a method must not be called on a nil lease"
	case strings.Contains(err, "non-positive interval"):
		return "a ticker was started with a TTL under 1ms: refuse such a TTL before starting anything (ErrBadTTL)"
	case strings.Contains(err, "did not return"):
		return "a call that waits must give up when its context ends: select on ctx.Done() beside the wait"
	case strings.Contains(err, "panic:"):
		return "the lock panicked: the panic's first line above says where"
	case strings.Contains(err, "no lease and no error"), strings.Contains(err, "and no error"):
		return "return a lease with a nil error, or an error: never neither"
	}
	return ""
}

// leakFix is the fix of a lock that left goroutines or calls running.
func leakFix(err error) string {
	if strings.Contains(err.Error(), "goroutines") {
		return "end every goroutine the lock starts: Watch's stop must stop its watchdog, and anything else the lock runs must end when the lock is closed"
	}
	return crashFix(err.Error())
}

// Fixes of the other failures, named where the checks report them.
const (
	fixSameTime     = "take the lock with SET key token NX PX ttl, one command that fails while anyone holds it, with a new random token in every Acquire"
	fixNoExpiry     = "set the expiry in the same command that takes the lock (SET key token NX PX ttl): a holder that dies before a second command leaves a key that never expires"
	fixDelNoToken   = "delete the key only while it holds your token, in one script (release.lua), so a late release cannot delete the next holder's lease"
	fixLostNotHeld  = "return the error itself when a release gets no reply: a lost reply is an unknown outcome, and \"not held\" tells the caller something nobody knows"
	fixBadTTL       = "refuse a TTL under 1ms before any command: a TTL of 0 is no expiry at all to go-redis and redis-py, and a library's default to others"
	fixUnbounded    = "stop waiting when ctx ends: select on ctx.Done() between tries"
	fixRecreate     = "extend only while the key holds your token (PEXPIRE in a script that checks it), and never SET it again: a lease that lapsed is gone"
	fixWatchdogDies = "renew every third of the TTL, bound each renewal by a third of the TTL, and cancel the work only when a renewal fails"
	fixNotCancelled = "cancel the work's context as soon as a renewal fails or times out (context.WithCancelCause), never only log it"
	fixFences       = "draw the fence with INCR in the same script that takes the lock, so each new holder's fence is above every earlier one"
	fixStaleWrite   = "have the database refuse a stale fence: claim the row with your fence when you read it (UPDATE ... SET fence = mine WHERE fence < mine) and write only WHERE fence = mine"
	fixRestart      = "run Redis with appendonly yes and appendfsync always where a lease must outlive a restart, or fence every write"
	fixForgotten    = "fence every write: a Redis that forgets a lease (a restart, a failover, a partition) lets a second holder in, and only the database's fence check keeps the money right"
	fixCancelled    = "release on a context of its own (context.WithoutCancel, or a fresh timeout), so the release goes out after the work's context ended"
	fixOrphan       = "when Acquire's reply is lost, ask again (or delete the key if it holds your token) before returning an error"
	fixWrongType    = "tell a key of another type from a held lock (SET NX on it fails the same way; check with a script, or TYPE) and say so at once"
)
