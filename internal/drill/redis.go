//go:build unix

package drill

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/services"
)

// ErrNoRedisServer is returned when redis-server is not on PATH.
var ErrNoRedisServer = errors.New("drill: redis-server not found on PATH: `make up` installs it (apt-get install redis-server, or brew install redis)")

// MasterName is the name the drill's sentinels monitor the primary under.
const MasterName = "drill"

// Server is a redis-server (or a sentinel) of the drill's own, on a
// loopback port.
type Server struct {
	Addr string
	Port int
	args []string
	dir  string
	out  *bytes.Buffer
	proc *Proc
}

// RedisBinary finds redis-server.
func RedisBinary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoRedisServer
	}
	return bin, nil
}

// freePort asks the kernel for a free loopback port. Another process can
// take it before redis-server binds it; StartRedis then tries again.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartRedis starts a redis-server with no persistence on a free loopback
// port, with extra arguments (such as --replicaof), and waits until it
// answers.
func (ps *Procs) StartRedis(ctx context.Context, dir string, extra ...string) (*Server, error) {
	var err error
	for range 3 {
		var port int
		if port, err = freePort(); err != nil {
			return nil, fmt.Errorf("drill: find a free port: %w", err)
		}
		args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--save", "", "--appendonly", "no",
			// A replica that reconnects gets its full copy at once, not after 5 s.
			"--repl-diskless-sync-delay", "0"}, extra...)
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, args: args, dir: dir}
		if err = ps.start(ctx, s); err == nil {
			return s, nil
		}
	}
	return nil, err
}

// StartSentinel starts a sentinel, from the same redis-server binary,
// watching the primary at primary with the given quorum.
func (ps *Procs) StartSentinel(ctx context.Context, dir, primary string, downAfter time.Duration) (*Server, error) {
	host, port, _ := net.SplitHostPort(primary)
	var err error
	for i := range 3 {
		var p int
		if p, err = freePort(); err != nil {
			return nil, fmt.Errorf("drill: find a free port: %w", err)
		}
		// A sentinel rewrites its configuration file, so it needs one.
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d-%d.conf", p, i))
		text := fmt.Sprintf("port %d\nbind 127.0.0.1\nsentinel monitor %s %s %s 2\n"+
			"sentinel down-after-milliseconds %s %d\n"+
			// Long, so that no sentinel "repairs" the replica's replication
			// through the drill's partition proxy during a run.
			"sentinel failover-timeout %s 60000\n",
			p, MasterName, host, port, MasterName, downAfter.Milliseconds(), MasterName)
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			return nil, fmt.Errorf("drill: write %s: %w", conf, err)
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(p)), Port: p, args: []string{conf, "--sentinel"}, dir: dir}
		if err = ps.start(ctx, s); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func (ps *Procs) start(ctx context.Context, s *Server) error {
	bin, err := RedisBinary()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, s.args...)
	cmd.Dir = s.dir
	s.out = new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: s.out}, &lockedWriter{w: s.out}
	name := "redis-server " + s.Addr
	if s.isSentinel() {
		name = "redis-sentinel " + s.Addr
	}
	p, err := ps.Start(name, cmd)
	if err != nil {
		return err
	}
	s.proc = p
	deadline := time.Now().Add(5 * time.Second)
	for !services.Answers(s.Addr) {
		select {
		case <-p.Exited():
			return fmt.Errorf("drill: %s exited at start: %s", name, lastLine(s.out.String()))
		case <-ctx.Done():
			p.Kill(time.Second)
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Kill(time.Second)
			return fmt.Errorf("drill: %s did not answer within 5s", name)
		}
	}
	return nil
}

func (s *Server) isSentinel() bool { return len(s.args) > 1 && s.args[1] == "--sentinel" }

// Proc is the server's process.
func (s *Server) Proc() *Proc { return s.proc }

// Restart kills the server (SIGKILL) and starts it again on the same port
// with the same arguments: with no persistence it comes back empty.
func (ps *Procs) Restart(ctx context.Context, s *Server) error {
	if !s.proc.Kill(3 * time.Second) {
		return fmt.Errorf("drill: %s did not die", s.proc)
	}
	var err error
	for range 20 { // the port can take a moment to be free again
		if err = ps.start(ctx, s); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

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
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("drill: start the replication proxy: %w", err)
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
