//go:build unix

// Package drill is the plumbing of cmd/drill: it runs spenders as real OS
// processes against redis-server processes of its own, injects real faults
// (SIGSTOP, SIGKILL, a restart without persistence, a Sentinel failover, a
// failover in a Redis Cluster) and judges what each locking strategy did to
// the money.
//
// Everything the drill signals it started itself (see internal/launch): it never
// looks up a process by name or pid, and it listens and connects on
// 127.0.0.1 only.
package drill
