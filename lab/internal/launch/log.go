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

func (l *Log) Write(p []byte) (n int, err error) {
	l.locked(func() { n, err = l.buf.Write(p) })
	return n, err
}

// String returns everything written so far.
func (l *Log) String() (s string) {
	l.locked(func() { s = l.buf.String() })
	return s
}

// Len is how many bytes have been written so far.
func (l *Log) Len() (n int) {
	l.locked(func() { n = l.buf.Len() })
	return n
}

func (l *Log) locked(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	f()
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
