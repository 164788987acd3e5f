// Package launch starts and stops processes of our own: redis-server as a
// plain node, a replica, a Sentinel or a cluster node (over TLS too),
// PostgreSQL, and copies of a program that spend for it.
//
// Every process belongs to the Group that started it and can be reached
// only through the Proc that Start returned, so nothing here can signal a
// process it did not start. On Unix each process runs in a process group
// of its own: a Ctrl-C at the terminal does not reach it, Pause, Resume
// and Kill reach it and its children, and on Linux it dies with the
// process that started it, even by SIGKILL. Servers listen on free
// loopback ports only.
//
// cluster.go joins cluster nodes into a Redis Cluster, masters with their
// shares of the slots and replicas, and waits until every node agrees:
// Group.StartCluster for nodes of a Group, CreateCluster for daemons.
//
// daemon_unix.go starts the other kind, servers that outlive the program
// that started them, each in a session of its own, and stops them again
// only when the process is the one recorded (Daemon: its pid, start time,
// folder and port; daemon_linux.go reads them from /proc, daemon_bsd.go
// from ps and lsof): cmd/servers, behind `make up`.
//
// Who uses it: cmd/drill (through package drill) for its servers and
// spender processes, internal/harness for the -procs copies of steps 1 and
// 2, and the tests through internal/labtest (StartRedis, StartCluster,
// StartPostgres), which tie a launched server to t.Cleanup.
package launch
