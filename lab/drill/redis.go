//go:build unix

package drill

import (
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the drill's sentinels monitor the primary under.
const MasterName = "drill"

// NewClient returns a client for one of the drill's servers, with short
// timeouts so that a dead or frozen server fails a call in bounded time,
// and no retries: a retried SET NX would muddle what was granted.
func NewClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second,
		ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 8})
}

// NewFailoverClient returns a client that finds the primary through the
// sentinels and follows a failover.
func NewFailoverClient(sentinels []string) *redis.Client {
	return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: sentinels,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second, MaxRetries: -1, PoolSize: 8})
}

// Proxy stands in the replication link between a replica and its primary,
// so that the drill can partition them: while Cut, nothing the primary
// sends reaches the replica, though the replica's acknowledgements still
// flow back. On loopback a paused replica would still find every write in
// its socket buffer when resumed; a proxy that stops reading does not pass
// them on.
type Proxy struct {
	Addr   string
	Port   int
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

// StartProxy listens on a free loopback port and forwards each connection
// to target.
func StartProxy(target string) (*Proxy, error) { return listenProxy("127.0.0.1:0", target) }

// listenProxy is StartProxy on the address addr (host:0 for a free port).
func listenProxy(addr, target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("drill: start a proxy to %s: %w", target, err)
	}
	p := &Proxy{Addr: ln.Addr().String(), Port: ln.Addr().(*net.TCPAddr).Port, target: target, ln: ln}
	go p.serve()
	return p, nil
}

func (p *Proxy) serve() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		up, err := net.DialTimeout("tcp", p.target, time.Second)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		go func() { io.Copy(up, down); up.Close(); down.Close() }()
		go func() { p.forward(down, up); up.Close(); down.Close() }()
	}
}

// forward copies what the primary sends to the replica, unless the link
// is cut: then it stops reading, and the bytes wait in the socket buffers
// until the connection is closed.
func (p *Proxy) forward(down, up net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		for p.isCut() {
			time.Sleep(5 * time.Millisecond)
			if p.closed(up) {
				return
			}
		}
		n, err := up.Read(buf)
		if n > 0 && !p.isCut() {
			if _, werr := down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) isCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

func (p *Proxy) closed(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.conns {
		if x == c {
			return false
		}
	}
	return true
}

// Cut partitions the link: from now on the replica receives nothing.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Drop closes every forwarded connection; whatever was held back is lost.
func (p *Proxy) Drop() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

// Close stops the proxy.
func (p *Proxy) Close() {
	p.ln.Close()
	p.Drop()
}
