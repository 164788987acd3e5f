// Package wire is a TCP proxy between Redis clients and a redis-server
// that understands RESP (2 and 3), so that a test can count, log, hold
// back and lose what passes on the wire, from any client library in any
// language: the judge's hand on the wire. Standard library only.
//
// Listen starts a proxy that reads every command and every reply. It
// matches replies to commands per connection, pipelined ones too; a
// RESP3 push ('>') is passed on and never taken for a reply, and an
// attribute ('|') goes with the reply after it. It counts every command
// but the connection's housekeeping (HELLO, AUTH, CLIENT ..., SELECT,
// PING, READONLY, READWRITE, COMMAND ..., QUIT, RESET, ECHO, CLUSTER
// ...), and logs what it counted (Log, OnCommand). A connection that sends SUBSCRIBE,
// PSUBSCRIBE, SSUBSCRIBE, MONITOR or CLIENT REPLY OFF|SKIP is copied
// untouched from then on, and nothing on it is counted. A frame larger
// than 64 MiB closes its connection, after an error reply that says so.
//
// Faults are armed one at a time, at a counted command k (Arm): the proxy
// pauses every command after k, holds k's reply back, loses it, or holds
// it for good while the caller kills the client; Struck says when and at
// which command. Freeze and Thaw hold every command and let them go;
// Drop closes every connection.
//
// ListenRaw starts a proxy that copies bytes and parses nothing, for a
// replication link: Cut stops what the upstream sends, Drop closes.
// ListenAs is one that logs every connection in as an ACL user first,
// for a client that knows only an address.
package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// maxFrame bounds a command or a reply: a larger one closes its
// connection rather than growing the proxy's memory.
const maxFrame = 64 << 20

// Fault is what the armed fault does at counted command k.
type Fault int

const (
	None       Fault = iota // count and log only
	PauseAfter              // k's reply goes through; the next command on any connection is held, and every one after it, until Resume (k = 0: the first)
	HoldReply               // k runs; its reply is held until Resume, and later replies on its connection behind it
	LoseReply               // k runs; its reply is lost: the proxy closes that client's connection
	KillAfter               // k runs; its reply is held for good, while the caller kills the client
)

// Proxy forwards every connection accepted on its address to a
// redis-server. Its methods may be called from any goroutine.
type Proxy struct {
	ln        net.Listener
	raw       bool
	login     []string // ListenAs: the AUTH sent on every connection to Redis
	max       int
	wg        sync.WaitGroup // the accept loop and each connection's two goroutines
	closeOnce sync.Once
	closeErr  error

	mu       sync.Mutex
	upstream string
	conns    map[*conn]bool
	accepted int
	closed   bool
	cut      bool
	watch    func(Command)

	gen       int // the arming: a command counted before the last Arm strikes no fault
	fault     Fault
	k         int
	seq       int
	log       []*Command
	struck    chan Command
	hit       bool          // the armed fault struck
	paused    bool          // a pause struck: commands wait in queue
	frozen    bool          // Freeze: commands wait in queue
	releasing bool          // a Resume or Thaw is forwarding the queue
	queue     []*held       // commands held, in the order they arrived
	resume    chan struct{} // closed by Resume: a held reply goes on
}

// held is a command waiting for its turn.
type held struct {
	c    *conn
	pe   *pending
	raw  []byte
	done chan struct{} // closed once it was forwarded
}

// conn is one client connection and its own connection to Redis.
type conn struct {
	p          *Proxy
	id         int
	client, up net.Conn
	done       chan struct{} // closed when the connection is closed
	once       sync.Once
	wmu        sync.Mutex // one writer to the client at a time

	user    string     // under p.mu
	pending []*pending // under p.mu: commands sent, waiting for their replies, in order
}

// pending is a command forwarded to Redis, waiting for its reply.
type pending struct {
	cmd  *Command // a counted command; nil for housekeeping
	gen  int
	user string // AUTH, HELLO ... AUTH or RESET: the user, once it succeeds
	pass bool   // SUBSCRIBE and kin, MONITOR: the connection is copied untouched from here
}

// Listen starts a proxy on addr ("127.0.0.1:0" for a free port) that
// forwards every connection to the redis-server at upstream and reads
// what passes: see the package's doc. Close it when done.
func Listen(addr, upstream string) (*Proxy, error) { return listen(addr, upstream, false, maxFrame) }

// ListenRaw starts a proxy that copies bytes both ways without reading
// them, for a link that is not a client's, such as a replica's to its
// primary: nothing is counted, Arm, Freeze and the log see nothing; Cut
// and Drop partition it.
func ListenRaw(addr, upstream string) (*Proxy, error) { return listen(addr, upstream, true, maxFrame) }

// ListenAs starts a raw proxy (ListenRaw) that logs every connection it
// makes to the redis-server at upstream in as user (AUTH user password)
// before it copies a byte: a client that knows only an address, such as
// a judge's holder, then has that user's rights on a Redis of ACL users,
// and nothing more. A refused login is the client's first reply.
func ListenAs(addr, upstream, user, password string) (*Proxy, error) {
	return listen(addr, upstream, true, maxFrame, "AUTH", user, password)
}

func listen(addr, upstream string, raw bool, max int, login ...string) (*Proxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("wire: listen on %s for a proxy to %s: %w", addr, upstream, err)
	}
	p := &Proxy{ln: ln, raw: raw, max: max, upstream: upstream, login: login, conns: map[*conn]bool{},
		struck: make(chan Command, 1), resume: make(chan struct{})}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address the proxy listens on, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// SetUpstream points the connections accepted from now on at another
// redis-server; those already open stay with theirs.
func (p *Proxy) SetUpstream(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.upstream = addr
}

// OnCommand sets a function that sees every counted command with its
// reply, as the reply comes back (before any fault acts on it). It is
// called on the proxy's goroutines, for two connections at once maybe,
// and must return quickly: the connection waits for it.
func (p *Proxy) OnCommand(f func(Command)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.watch = f
}

// Close stops listening, closes every connection, and returns once every
// goroutine of the proxy has ended. Only the first call does anything.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
		p.closeErr = p.ln.Close()
		p.Drop()
		p.wg.Wait()
	})
	return p.closeErr
}

// Drop closes every connection, as a network that fails would: the
// commands held by a pause or Freeze are lost, never sent. The armed
// fault, Freeze and Cut stay as they were; new connections are accepted.
func (p *Proxy) Drop() {
	p.mu.Lock()
	conns := p.conns
	p.conns, p.queue = map[*conn]bool{}, nil
	p.mu.Unlock()
	for c := range conns {
		c.close()
	}
}

// Cut stops passing on what Redis sends, on every connection, for good:
// what it sends waits in the socket buffers, and what clients send still
// reaches it. On a replica's link to its primary, this partitions them
// while the replica's acknowledgements still flow.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
}

// Arm starts a new count and log, and arms fault f at counted command k
// (1-based; None arms nothing). A pause or held reply of the previous
// fault is let go, as by Resume.
func (p *Proxy) Arm(f Fault, k int) {
	p.mu.Lock()
	if !p.hit {
		close(p.struck)
	}
	p.gen++
	p.fault, p.k, p.seq, p.log, p.hit = f, k, 0, nil, false
	p.struck = make(chan Command, 1)
	p.mu.Unlock()
	p.Resume()
}

// Struck returns a channel that receives, once, the command the armed
// fault struck at, and is then closed: for PauseAfter the command it held
// (Received says when), for the others command k with its reply (Replied
// says when). The next Arm closes it with no value if it never struck.
func (p *Proxy) Struck() <-chan Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.struck
}

// Resume lets go what a PauseAfter or HoldReply holds: the held commands
// are forwarded in the order they arrived (unless frozen), and the held
// reply is delivered. A reply held by KillAfter is not.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.paused = false
	close(p.resume)
	p.resume = make(chan struct{})
	p.mu.Unlock()
	p.release()
}

// Freeze holds every command from now on, on every connection, as if
// every client process were paused.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frozen = true
}

// Thaw forwards the commands Freeze held, in the order they arrived, and
// holds no more.
func (p *Proxy) Thaw() {
	p.mu.Lock()
	p.frozen = false
	p.mu.Unlock()
	p.release()
}

// Log returns the commands counted since the last Arm, in order. It
// grows until the next Arm.
func (p *Proxy) Log() []Command {
	p.mu.Lock()
	defer p.mu.Unlock()
	log := make([]Command, len(p.log))
	for i, c := range p.log {
		log[i] = *c
	}
	return log
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of file descriptors, say: try again
			time.Sleep(10 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		upstream := p.upstream
		p.mu.Unlock()
		up, err := net.DialTimeout("tcp", upstream, 2*time.Second)
		if err != nil {
			if !p.raw {
				fmt.Fprintf(client, "-ERR wire: the proxy cannot reach Redis at %s: is the redis-server running?\r\n", upstream)
			}
			client.Close()
			continue
		}
		if p.login != nil {
			if err := logIn(up, p.login); err != nil {
				up.Close()
				p.wg.Add(1)
				go p.refuseAll(client, err) // every command it sends, for a few seconds
				continue
			}
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			client.Close()
			up.Close()
			return
		}
		p.accepted++
		c := &conn{p: p, id: p.accepted, client: client, up: up, done: make(chan struct{}), user: "default"}
		p.conns[c] = true
		p.wg.Add(2)
		p.mu.Unlock()
		if p.raw {
			go c.run(func() { io.Copy(up, client) })
			go c.run(func() { c.copyDown(up) })
		} else {
			go c.run(c.commands)
			go c.run(c.replies)
		}
	}
}

func (c *conn) close() {
	c.once.Do(func() {
		close(c.done)
		c.client.Close()
		c.up.Close()
		c.p.mu.Lock()
		delete(c.p.conns, c)
		c.p.mu.Unlock()
	})
}

// write writes to the client.
func (c *conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.client.Write(b)
	return err
}

// run is one of the connection's two goroutines: when either ends, the
// connection closes.
func (c *conn) run(f func()) {
	defer c.p.wg.Done()
	defer c.close()
	f()
}

// copyDown copies what Redis sends to the client, untouched, until Cut:
// then it reads no more.
func (c *conn) copyDown(from io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 && c.p.isCut() {
			<-c.done
			return
		}
		if n > 0 && c.write(buf[:n]) != nil {
			return
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

// commands reads what the client sends, counts it, and forwards it
// unless a fault or Freeze holds it.
func (c *conn) commands() {
	r := newReader(c.client, c.p.max)
	for {
		f, err := r.readCommand()
		if err != nil {
			c.refuse(err, "a command", "send smaller values")
			return
		}
		var pe *pending // none for an empty command: Redis ignores it, and does not answer
		if len(f.args) > 0 {
			pe = c.p.count(c, f.args, time.Now().UnixNano())
		}
		if !c.p.admit(c, pe, f.raw) {
			return
		}
		if pe != nil && pe.pass {
			io.Copy(c.up, r.br) // what the reader had buffered, then the rest
			return
		}
	}
}

// refuse tells the client why its connection closes, when the reason is
// a frame (what: "a command", "a reply") too big or not RESP; fix says
// what to do about a frame too big.
func (c *conn) refuse(err error, what, fix string) {
	bound := fmt.Sprintf("%d MiB", c.p.max>>20)
	if c.p.max < 1<<20 {
		bound = fmt.Sprintf("%d bytes", c.p.max)
	}
	var msg string
	switch {
	case errors.Is(err, errTooBig):
		msg = fmt.Sprintf("wire: %s larger than %s, the proxy's bound; it closed the connection: %s", what, bound, fix)
	case errors.Is(err, errProtocol):
		msg = fmt.Sprintf("wire: %s that is not RESP (%v); the proxy closed the connection", what, err)
	default:
		return
	}
	c.write([]byte("-ERR " + strings.NewReplacer("\r", " ", "\n", " ").Replace(msg) + "\r\n"))
}

// count makes a command's pending entry, and counts and logs it unless
// it is housekeeping or starts a passthrough.
func (p *Proxy) count(c *conn, args []string, now int64) *pending {
	name := strings.ToUpper(args[0])
	// CLIENT REPLY OFF or SKIP: Redis leaves commands unanswered, so
	// replies could no longer be matched to them.
	noReply := name == "CLIENT" && len(args) > 2 && strings.EqualFold(args[1], "REPLY") && !strings.EqualFold(args[2], "ON")
	pe := &pending{pass: passthrough[name] || noReply, user: authUser(name, args[1:])}
	if pe.pass || housekeeping[name] {
		return pe
	}
	redact(name, args[1:])
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	pe.cmd = &Command{Seq: p.seq, Conn: c.id, User: c.user, Name: name, Args: args[1:], Received: now}
	pe.gen = p.gen
	p.log = append(p.log, pe.cmd)
	return pe
}

// admit forwards a command, or holds it while a pause or Freeze holds
// commands (a pause strikes here), and reports whether the connection is
// still open.
func (p *Proxy) admit(c *conn, pe *pending, raw []byte) bool {
	p.mu.Lock()
	if pe != nil && pe.cmd != nil && pe.gen == p.gen && p.fault == PauseAfter && !p.hit && pe.cmd.Seq > p.k {
		p.hit, p.paused = true, true
		p.struck <- *pe.cmd
		close(p.struck)
	}
	if !p.paused && !p.frozen && !p.releasing && len(p.queue) == 0 {
		p.mu.Unlock()
		return c.forward(pe, raw)
	}
	h := &held{c: c, pe: pe, raw: raw, done: make(chan struct{})}
	p.queue = append(p.queue, h)
	p.mu.Unlock()
	select {
	case <-h.done:
		return true
	case <-c.done:
		return false
	}
}

// release forwards the held commands in the order they arrived, while
// neither a pause nor Freeze holds them. Commands that arrive meanwhile
// queue behind them.
func (p *Proxy) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.releasing {
		return // the other call forwards them
	}
	p.releasing = true
	for len(p.queue) > 0 && !p.paused && !p.frozen {
		h := p.queue[0]
		p.queue = p.queue[1:]
		p.mu.Unlock()
		h.c.forward(h.pe, h.raw)
		close(h.done)
		p.mu.Lock()
	}
	p.releasing = false
}

// forward sends a command to Redis, and reports whether it could.
func (c *conn) forward(pe *pending, raw []byte) bool {
	if pe != nil {
		c.p.mu.Lock()
		c.pending = append(c.pending, pe)
		if pe.cmd != nil {
			pe.cmd.Sent = time.Now().UnixNano()
		}
		c.p.mu.Unlock()
	}
	if _, err := c.up.Write(raw); err != nil {
		c.close()
		return false
	}
	return true
}

// replies reads what Redis sends, matches each reply to its command,
// logs it, and passes it on unless the armed fault strikes at it.
func (c *conn) replies() {
	r := newReader(c.up, c.p.max)
	for {
		if c.passing() {
			c.copyDown(r.br) // what the reader had buffered, then the rest
			return
		}
		f, err := r.readReply()
		if err != nil {
			c.refuse(err, "a reply", "ask for less at a time (SCAN, not KEYS)")
			return
		}
		if f.kind != '>' && !c.p.replied(c, f) {
			return
		}
		if c.p.isCut() {
			<-c.done
			return
		}
		if c.write(f.raw) != nil {
			return
		}
	}
}

// passing reports whether every reply before a passthrough command was
// matched: the connection is copied untouched from here.
func (c *conn) passing() bool {
	c.p.mu.Lock()
	defer c.p.mu.Unlock()
	return len(c.pending) > 0 && c.pending[0].pass
}

// replied matches reply f to the oldest pending command of c, logs it,
// and applies the armed fault; it reports whether to pass the reply on.
func (p *Proxy) replied(c *conn, f frame) bool {
	p.mu.Lock()
	if len(c.pending) == 0 || c.pending[0].pass {
		p.mu.Unlock()
		return true // nothing to match: a passthrough's first reply, or Redis's own
	}
	pe := c.pending[0]
	c.pending = c.pending[1:]
	if pe.user != "" && f.kind != '-' && f.kind != '!' {
		c.user = pe.user
	}
	if pe.cmd == nil {
		p.mu.Unlock()
		return true
	}
	pe.cmd.User, pe.cmd.Replied, pe.cmd.Reply = c.user, time.Now().UnixNano(), f.short()
	cmd, watch, resume, ch := *pe.cmd, p.watch, p.resume, p.struck
	fault := None
	if pe.gen == p.gen && !p.hit && cmd.Seq == p.k && p.fault != PauseAfter {
		fault, p.hit = p.fault, true
	}
	p.mu.Unlock()
	if watch != nil {
		watch(cmd)
	}
	if fault == None {
		return true
	}
	ch <- cmd // before a lost reply's close: a client that sees the close finds Struck ready
	close(ch)
	if fault == LoseReply {
		c.close()
	}
	switch fault {
	case HoldReply:
		select {
		case <-resume:
			return true
		case <-c.done:
		}
	case KillAfter:
		<-c.done
	}
	return false
}

// refuseAll answers every command a client sends with err, for a few
// seconds, then hangs up: a client that ignores the error of its first
// command (go-redis's HELLO) still reads it.
func (p *Proxy) refuseAll(client net.Conn, err error) {
	defer p.wg.Done()
	defer client.Close()
	client.SetDeadline(time.Now().Add(3 * time.Second))
	reply := "-ERR wire: " + strings.NewReplacer("\r", " ", "\n", " ").Replace(err.Error()) + "\r\n"
	r := newReader(client, 1<<20)
	for {
		if _, err := r.readCommand(); err != nil {
			return
		}
		if _, err := io.WriteString(client, reply); err != nil {
			return
		}
	}
}

// logIn sends a command on a new connection to Redis and reads its reply:
// +OK, or the error it is. Redis sends nothing more before the next
// command, so the reader buffers nothing the copy that follows needs.
func logIn(up net.Conn, args []string) error {
	cmd := fmt.Sprintf("*%d\r\n", len(args))
	for _, a := range args {
		cmd += fmt.Sprintf("$%d\r\n%s\r\n", len(a), a)
	}
	up.SetDeadline(time.Now().Add(2 * time.Second))
	defer up.SetDeadline(time.Time{})
	_, err := io.WriteString(up, cmd)
	var f frame
	if err == nil {
		f, err = newReader(up, 1<<10).readReply()
	}
	switch {
	case err != nil:
		return fmt.Errorf("log in as %s: %w", args[1], err)
	case f.kind != '+':
		return fmt.Errorf("the login as %s was refused: %s", args[1], f.text)
	}
	return nil
}
