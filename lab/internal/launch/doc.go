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
// daemon_unix.go starts the other kind, servers that outlive the program
// that started them (cmd/servers, behind `make up`), and stops them again
// only when the process is the one recorded (Daemon). owner_unix.go says
// whose a run's leftovers are.
package launch
