// Package harness is what the lab's programs do the same way, so that a
// workshop room sees the same behaviour from each: the shared flags
// (-prefix, -json, -history) and their bounds (Program, Parse, Refuse,
// CheckPrefix, CheckDuration, Pick), Ctrl-C, SIGTERM, SIGHUP and a closed
// pipe (Main: the first cancels, the second exits; Command passes one on
// to a program it runs), the run lease that makes a run the only user of
// its prefix (TakeLease), the commands that name what a run could not
// clean up (RedisDelPrefix, PostgresDeleteOwner, ...), the check against
// the lesson and the report with its exit code (Report), and the
// repository's two modules, found and built (Repo, Build).
//
// The run lease (lease.go) is a lock of package lock, the lab's one lock:
// taken with TryAcquire, kept alive by KeepAliveRetrying (which rides out
// a Redis stall shorter than its TTL), given back with Release, and a
// context cancelled when it is lost. The drill keeps a second one,
// in PostgreSQL (package drill, TakePrefix), on purpose: the drill needs
// no Redis but the servers it starts, kills and restarts empty (a lease
// there would not survive its own faults), and its rows live in
// PostgreSQL. Its lease is an advisory lock on one session, which the
// server drops when the drill dies: no TTL to wait out, no watchdog, and
// TakeOver can ask whether a dead drill's lease is free in the same
// database as the rows it then deletes. The two share "take, or be
// refused as busy; release", and nothing else, so an interface over both
// would have one caller per side.
//
// Used by cmd/loadtest, cmd/drill and cmd/workshop, and through them
// package loadtest and internal/charts. The article's steps, at the
// root, have their own small package (internal/step there).
//
//	func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
//		h := harness.New("loadtest", "walletlock:loadtest:", stdout, stderr)
//		f := loadtest.AddFlags(h)
//		if code, ok := h.Parse(args, f.Checks); !ok {
//			return code
//		}
//		...
//		return report.Finish(stdout, stderr, h.JSON())
//	}
package harness
