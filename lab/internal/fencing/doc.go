// Package fencing is step 5's plumbing, and the join that step 6's fenced
// strategy shares with it: a lease with a fencing token from Redis
// (lock.AcquireFenced) and a wallet row in PostgreSQL that refuses writes
// from an older token (wallet/postgres).
//
//   - Fenced takes the lease, writes with its fence and gives the lease
//     back; Heal, which it calls, raises the fence counter when
//     PostgreSQL refuses a fence that Redis handed out again after losing
//     its counter. Step 5's phase 3 and step 6's fenced strategy use them.
//   - Rows runs a row program's phases (step 5): the wallet -wallet-id
//     names, one row owned by the run's prefix, a fresh row for each phase
//     (Run.Fresh) and its check (Run.Outcome), on top of the harness's
//     phase loop. Flags are its flags' checks.
//   - Story and Refusals are what step 5's phases count and print.
//
// It is a package of its own, beside internal/harness, because it links
// lock and pgx: step 1, which keeps its wallet in Redis and has no lock,
// links the harness without them. lock knows nothing of wallets and wallet
// nothing of locks; this is where they meet.
//
// What Fenced adds to the two is the heal. Redis keeps the fence counter
// in memory; after a restart without persistence the counter starts again
// from 1, below the fences PostgreSQL has already accepted. That stays
// safe (PostgreSQL refuses every one of those low fences) but, left alone,
// it would refuse them until the counter had climbed back on its own. So
// when PostgreSQL refuses a fence, Fenced raises the counter to the fence
// PostgreSQL holds, and the next holder gets a fence above it.
//
// Used by cmd/step5-fencing, and by internal/loadtest's fenced strategy
// (step 6, the drill and the workshop through it).
package fencing
