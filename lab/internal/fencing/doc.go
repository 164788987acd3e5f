// Package fencing is the join of a lease with a fencing token from Redis
// (lock.AcquireFenced) and a wallet row in PostgreSQL that refuses writes
// from an older token (wallet/postgres), and what keeps that join working
// after Redis loses its fence counter:
//
//   - Fenced takes the lease, writes with its fence and gives the lease
//     back, healing the counter when PostgreSQL refuses its fence.
//   - Heal, which Fenced calls, raises the fence counter to the fence
//     PostgreSQL holds when PostgreSQL refuses a fence that Redis handed
//     out again after losing its counter.
//
// lock knows nothing of wallets and wallet nothing of locks; this is where
// they meet.
//
// What Fenced adds to the two is the heal. Redis keeps the fence counter
// in memory; after a restart without persistence the counter starts again
// from 1, below the fences PostgreSQL has already accepted. That stays
// safe (PostgreSQL refuses every one of those low fences) but, left alone,
// it would refuse them until the counter had climbed back on its own. So
// when PostgreSQL refuses a fence, Fenced raises the counter to the fence
// PostgreSQL holds, and the next holder gets a fence above it.
//
// Used by the load test's fenced strategy (cmd/loadtest, the drill and
// their tests through it), which writes Fenced out to time the wait apart
// and shares Heal; this package's tests show the heal on Fenced.
package fencing
