// Package judge runs a Redis lock through the article's properties,
// chapter by chapter, and says in plain words what broke: step 2 (one
// holder at a time, a killed holder's lease frees, a release frees only
// its own, a lost reply is unknown, a TTL under 1 ms is refused, a wait
// is bounded), step 3 (refresh, the watchdog), step 5 (fences, and
// PostgreSQL refusing a paused holder's write), the faults (Redis
// restarted with and without its data, a Sentinel failover, a partition)
// and the guards production adds.
//
// The lock sits behind an adapter of a few lines (Adapter, Lock, Lease,
// and the optional Watcher, Fencer and FencedLock); what it does not
// offer is "not claimed", never a pass. Article adapts a package with the
// root lock's API; package locks holds the adapters of the locks the lab
// knows. Every call to the lock runs in a holder process (this program or
// test binary started again, see Holder), on a redis-server of the
// judge's own: a lock that panics, hangs or leaks goroutines takes a
// holder down, and the judge says "did not return" and goes on. The
// holders are killed (SIGKILL) and paused (SIGSTOP) for real.
//
// A verdict names the first operation that broke the property, who held
// which lease from when to when; WritePage draws each check's timeline.
// The seed picks the schedule, and the same seed replays it.
//
// Entry points: cmd/judge (make judge, make judge-matrix, make exercise),
// Main for a program of one's own, and Test, one line in a learner's test:
//
//	func TestJudge(t *testing.T) { judge.Test(t, adapter) }
package judge
