package launch

import (
	"bytes"
	"net"
	"strings"
	"sync"

	"example.com/walletlock/internal/safe"
)

// Log is what a process wrote, safe to read while it writes.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// String returns everything written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Len is how many bytes have been written so far.
func (l *Log) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Len()
}

// LastLine returns the last line written, for an error message: what a
// server wrote, so shown through the one printable filter.
func (l *Log) LastLine() string {
	return safe.Line(lastLine(l.String()))
}

// lastLine is the last line of s that says something.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}

// FreePort asks the kernel for a free loopback port. Another process can
// take it before ours binds it: the starters here try again.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
