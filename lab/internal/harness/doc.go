// Package harness is what every program here does the same way, so that
// a step's main.go holds its lesson and little else, and a workshop room
// sees the same behaviour from each program: the shared flags (-prefix,
// -json, -procs) and their bounds (Program, Parse, Refuse, CheckMax, ...),
// the flags of a lesson whose spenders each hold a lock (LockFlags: -n,
// -ttl, -work, -wait; steps 2, 3 and 4),
// Ctrl-C, SIGTERM, SIGHUP and a closed pipe (Main: the first cancels, the
// second exits), the run lease that makes a run the only user of its
// prefix (TakeLease, Session), the bounded clean-up and the line naming
// what it left (Session.Close, RedisDel, PostgresDelete), the check line
// and the report with its exit code (Report), and the loops around a
// lesson: Program.Spenders for a crowd of spenders (steps 1 and 2), as
// goroutines or, with -procs, as copies of the program started through
// internal/launch (procs.go; a copy is told by Child), and one phase loop
// for phases run in turn: Program.Phases on Redis keys (step 3), and
// Program.Loop under internal/fencing's Rows, which runs step 5's phases
// on a wallet row in PostgreSQL guarded by a Redis lock.
//
// The harness links no lock and no PostgreSQL driver, so that step 1,
// which has neither, does not link them: step 5's row and fencing live in
// internal/fencing, the wallet's PostgreSQL half in wallet/postgres, and
// the run lease here (lease.go) is a lease in Redis written with plain
// commands, not with package lock: a TTL, a watchdog that refreshes it,
// and a context cancelled when it is lost. The drill keeps a second one, in PostgreSQL
// (internal/drill, TakePrefix), on purpose: the drill needs no Redis but
// the servers it starts, kills and restarts empty (a lease there would not
// survive its own faults), and its rows live in PostgreSQL. Its lease is
// an advisory lock on one session, which the server drops when the drill
// dies: no TTL to wait out, no watchdog, and TakeOver can ask whether a
// dead drill's lease is free in the same database as the rows it then
// deletes. The two share "take, or be refused as busy; release", and
// nothing else, so an interface over both would have one caller per side.
//
// Used by cmd/step1-race .. cmd/step6-loadtest, cmd/drill, cmd/workshop,
// and through them internal/loadtest and internal/charts.
//
//	func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
//		h := harness.New(step, wallet.DefaultPrefix+"step1:", stdout, stderr)
//		n := h.Flags.Int("n", 50, "concurrent spenders")
//		if code, ok := h.Parse(args, nil, nil); !ok {
//			return code
//		}
//		return h.Spenders(ctx, *n, 0, "race", keys, lesson)
//	}
package harness
