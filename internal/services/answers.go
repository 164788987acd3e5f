package services

import (
	"net"
	"strings"
	"time"
)

// Answers reports whether a Redis server at addr replies to a PING within
// a second, over a bare connection: no client, no retries, no password (a
// server that wants one still answers, with an error). The drills and the
// tests use it to wait for a redis-server they started to accept
// connections.
func Answers(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 64)
	n, err := conn.Read(b)
	return err == nil && n > 0 && strings.ContainsRune("+-", rune(b[0]))
}
