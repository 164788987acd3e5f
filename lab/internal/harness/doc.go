// Package harness is what the lab's programs do the same way, so that a
// workshop room sees the same behaviour from each: the shared flags
// (-prefix, -json, -history) and their bounds (Program, Parse, Refuse,
// CheckPrefix, CheckDuration, Pick), Ctrl-C, SIGTERM, SIGHUP and a closed
// pipe (Main: the first cancels, the second exits; Command passes one on
// to a program it runs), the run lease that makes a run the only user of
// its prefix (TakeLease), the commands that name what a run could not
// clean up (RedisDelPrefix, PostgresDeleteOwner, ...), the check against
// the lesson and the report with its exit code (Report), and the
// repository's two modules, found and built (Repo, Build). cmd/loadtest's
// main.go is a program built on it, from New to Report.Finish.
//
// The drill keeps a run lease of its own, in PostgreSQL (drill.TakePrefix),
// on purpose: its Redis servers are its own, and it kills and restarts
// them empty, so a lease there would not survive its own faults. The two
// leases share "take, or be refused as busy; release", and nothing else.
// The article's steps, at the root, have their own small package
// (internal/step there).
package harness
