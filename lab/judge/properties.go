package judge

// The properties, in the order the judge checks them, by chapter.
var properties = []property{
	{id: "one-holder", chapter: "lease", title: "at most one holder at a time, also with an Acquire stopped between its commands", run: oneHolder},
	{id: "killed-frees", chapter: "lease", title: "a killed holder's lease frees within its TTL", run: killedFrees},
	{id: "release-own", chapter: "lease", title: "a release frees its own lease at once, and only its own, also when stopped between its commands", run: releaseOwn},
	{id: "lost-reply", chapter: "lease", title: "a lost reply is an unknown outcome, never \"not held\"", run: lostReply},
	{id: "ttl-refused", chapter: "lease", title: "a TTL under 1ms is refused before any command, by every call that takes one", run: ttlRefused},
	{id: "wait-bounded", chapter: "lease", title: "a wait is bounded by its context", run: waitBounded},
	{id: "refresh-own", chapter: "watchdog", title: "a refresh extends only its own lease, also when stopped between its commands", needs: "refresh", run: refreshOwn},
	{id: "watchdog-keeps", chapter: "watchdog", title: "a watchdog keeps a slow holder's lease", needs: "watch", run: watchdogKeeps},
	{id: "work-cancelled", chapter: "watchdog", title: "the work is cancelled as soon as the lease is lost, also when the watchdog's refresh is stopped", needs: "watch", run: workCancelled},
	{id: "fences-increase", chapter: "fencing", title: "fences strictly increase across holders, also when AcquireFenced is stopped between its commands", needs: "fence", run: fencesIncrease},
	{id: "stale-write", chapter: "fencing", title: "PostgreSQL refuses the write of a holder paused past its TTL", run: staleWrite},
	{id: "restart-keeps", chapter: "faults", title: "a lease outlives a restart of a Redis that keeps its data (appendonly yes)", run: restartKeeps},
	{id: "restart-empty", chapter: "faults", title: "Redis restarted empty under a holder: the money stays right", run: forgotten(restart)},
	{id: "failover", chapter: "faults", title: "a Sentinel failover to a replica that never got the lease: the money stays right", slow: true, run: forgotten(failover)},
	{id: "partition", chapter: "faults", title: "the primary cut off from the majority (a partition): the money stays right", slow: true, run: partitioned},
	{id: "release-cancelled", chapter: "guards", title: "a release sent on a cancelled context still frees the lock", run: releaseCancelled},
	{id: "lost-acquire-reply", chapter: "guards", title: "an Acquire whose reply was lost leaves no orphan lease", run: lostAcquireReply},
	{id: "wrong-type", chapter: "guards", title: "a key that holds something else is refused at once, not waited for", run: wrongType},
}
