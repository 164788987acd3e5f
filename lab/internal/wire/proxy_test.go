package wire

// These tests run a redis-server of their own (internal/labtest) and
// speak to it through the proxy, with go-redis and with raw connections
// that write RESP by hand. Without redis-server they skip, or fail under
// CI.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/labtest"
)

// within bounds every wait for something that must happen: a liveness
// bound, not a measure.
const within = 10 * time.Second

// proxyTo starts a proxy in front of srv, closed when the test ends.
func proxyTo(t *testing.T, srv *labtest.RedisServer) *Proxy {
	t.Helper()
	p, err := Listen("127.0.0.1:0", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// setup starts a redis-server with args and a proxy in front of it, and
// returns the proxy and a client of the server that bypasses it.
func setup(t *testing.T, args ...string) (*Proxy, *redis.Client) {
	t.Helper()
	srv := labtest.StartRedis(t, args...)
	return proxyTo(t, srv), srv.Client(t)
}

// client returns a go-redis client of the proxy with one connection, no
// retries and no read timeout (a held reply is held as long as the test
// says).
func client(t *testing.T, p *Proxy, opt redis.Options) *redis.Client {
	t.Helper()
	opt.Addr, opt.PoolSize, opt.MaxRetries, opt.ReadTimeout = p.Addr(), 1, -1, -1
	rdb := redis.NewClient(&opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// rawConn is a client connection that writes commands and reads frames
// itself, to say exactly what is on the wire.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *reader
}

func dial(t *testing.T, p *Proxy) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{t: t, c: c, r: newReader(c, maxFrame)}
}

// send writes a command as an array of bulk strings, without waiting for
// its reply.
func (rc *rawConn) send(args ...string) {
	rc.t.Helper()
	b := fmt.Appendf(nil, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	if _, err := rc.c.Write(b); err != nil {
		rc.t.Fatalf("send %q: %v", args, err)
	}
}

// read reads the next frame.
func (rc *rawConn) read() frame {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(within))
	f, err := rc.r.readReply()
	if err != nil {
		rc.t.Fatalf("read a reply: %v", err)
	}
	return f
}

// do sends a command and returns its reply in short.
func (rc *rawConn) do(args ...string) string {
	rc.t.Helper()
	rc.send(args...)
	return rc.read().short()
}

// closed checks that the proxy closed the connection: a read ends.
func (rc *rawConn) closed() {
	rc.t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(within))
	if f, err := rc.r.readReply(); err == nil {
		rc.t.Fatalf("read %s, want the connection closed", f.short())
	} else if errors.Is(err, errTooBig) || errors.Is(err, errProtocol) || errors.Is(err, os.ErrDeadlineExceeded) {
		rc.t.Fatalf("read: %v, want the connection closed", err)
	}
}

// waitFor waits until cond holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(within); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited %v for %s", within, what)
		}
	}
}

// struck waits until the armed fault strikes, and returns the command it
// struck at.
func struck(t *testing.T, p *Proxy) Command {
	t.Helper()
	select {
	case c, ok := <-p.Struck():
		if !ok {
			t.Fatal("Struck closed without a command")
		}
		return c
	case <-time.After(within):
		t.Fatalf("the fault did not strike within %v; log: %v", within, p.Log())
	}
	return Command{}
}

// logged waits until the proxy has counted n commands since Arm.
func logged(t *testing.T, p *Proxy, n int) []Command {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d commands in the log", n), func() bool { return len(p.Log()) >= n })
	return p.Log()
}

func exists(t *testing.T, direct *redis.Client, key string) bool {
	t.Helper()
	n, err := direct.Exists(t.Context(), key).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// short is the log's commands as sentences, each with its reply.
func short(log []Command) string {
	var lines []string
	for _, c := range log {
		lines = append(lines, c.String()+" -> "+c.Reply)
	}
	return strings.Join(lines, "\n")
}

func TestGoRedis_countsAndLogs(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			p, _ := setup(t, "--user", "alice", "on", ">secret", "~*", "&*", "+@all")
			var mu sync.Mutex
			var seen []Command
			p.OnCommand(func(c Command) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, c)
			})
			rdb := client(t, p, redis.Options{Protocol: proto, Username: "alice", Password: "secret"})
			ctx := t.Context()
			if _, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Set(ctx, "k", "1", 0)
				pipe.Incr(ctx, "k")
				pipe.Get(ctx, "k")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if _, err := rdb.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
				pipe.Incr(ctx, "k")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			// A script the server has not seen: EVALSHA, NOSCRIPT, then EVAL.
			if v, err := redis.NewScript("return redis.call('GET', KEYS[1])").Run(ctx, rdb, []string{"k"}).Result(); err != nil || v != "3" {
				t.Fatalf("Script.Run = %v, %v; want 3", v, err)
			}
			want := strings.Join([]string{
				"SET k 1 -> OK", "INCR k -> (integer) 2", `GET k -> "2"`,
				"MULTI -> OK", "INCR k -> QUEUED", "EXEC -> [1 item]",
				"EVALSHA on k -> (error) NOSCRIPT No matching script. Please use EVAL.", `EVAL on k -> "3"`,
			}, "\n")
			log := p.Log()
			if got := short(log); got != want {
				t.Errorf("log:\n%s\nwant:\n%s", got, want)
			}
			for i, c := range log {
				// go-redis may take a second connection for the transaction.
				if c.Seq != i+1 || c.Conn < 1 || c.User != "alice" || c.Received == 0 || c.Sent == 0 || c.Replied == 0 {
					t.Errorf("command %d: %#v, want seq %d as alice, with its three times", i, c, i+1)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if got := short(seen); got != want {
				t.Errorf("OnCommand saw:\n%s\nwant:\n%s", got, want)
			}
			if s := fmt.Sprintf("%+v %+v", log, seen); strings.Contains(s, "secret") {
				t.Errorf("the log keeps the password: %s", s)
			}
		})
	}
}

// A client library's topology probe, sent as it connects, is not the
// lock's first command.
func TestHousekeeping_clusterSlotsNotCounted(t *testing.T) {
	p, _ := setup(t)
	c := dial(t, p)
	if got := c.do("CLUSTER", "SLOTS"); !strings.HasPrefix(got, "(error)") {
		t.Fatalf("CLUSTER SLOTS on a server without cluster support = %s, want an error", got)
	}
	c.do("SET", "k", "v")
	if got := short(p.Log()); got != "SET k V -> OK" {
		t.Errorf("log:\n%s\nwant only the SET", got)
	}
}

func TestClientTracking_pushShiftsNoReply(t *testing.T) {
	p, _ := setup(t)
	tracked, writer := dial(t, p), dial(t, p)
	if got := tracked.do("HELLO", "3"); got != "{7 pairs}" {
		t.Fatalf("HELLO 3 = %s", got)
	}
	if got := tracked.do("CLIENT", "TRACKING", "ON"); got != "OK" {
		t.Fatalf("CLIENT TRACKING ON = %s", got)
	}
	writer.do("SET", "k", "v")
	tracked.do("GET", "k")
	writer.do("SET", "k", "w") // Redis pushes an invalidation of k to tracked
	tracked.send("GET", "k")
	if push := tracked.read(); push.kind != '>' || !strings.Contains(string(push.raw), "invalidate") {
		t.Fatalf("read %q, want the invalidation push", push.raw)
	}
	if got := tracked.read().short(); got != `"w"` {
		t.Fatalf("GET k after the push = %s, want \"w\"", got)
	}
	want := "SET k V -> OK\nGET k -> \"v\"\nSET k W -> OK\nGET k -> \"w\""
	if got := short(p.Log()); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}
}

func TestPubSub_passesThrough(t *testing.T) {
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			p, _ := setup(t)
			sub := client(t, p, redis.Options{Protocol: proto})
			pub := client(t, p, redis.Options{Protocol: proto})
			ctx := t.Context()
			ps := sub.Subscribe(ctx, "ch")
			defer ps.Close()
			if _, err := ps.Receive(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := pub.Publish(ctx, "ch", "hello").Result(); err != nil || n != 1 {
				t.Fatalf("PUBLISH = %d, %v; want 1 receiver", n, err)
			}
			if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "hello" {
				t.Fatalf("message = %v, %v; want hello", m, err)
			}
			if got := short(p.Log()); got != "PUBLISH ch HELLO -> (integer) 1" {
				t.Errorf("log:\n%s\nwant only the PUBLISH", got)
			}
		})
	}
}

func TestMonitor_passesThrough(t *testing.T) {
	p, _ := setup(t)
	monitor, other := dial(t, p), dial(t, p)
	if got := monitor.do("MONITOR"); got != "OK" {
		t.Fatalf("MONITOR = %s", got)
	}
	other.do("SET", "k", "v")
	if line := monitor.read(); !strings.Contains(line.text, `"SET" "k" "v"`) {
		t.Fatalf("MONITOR read %q, want the SET", line.text)
	}
	if got := short(p.Log()); got != "SET k V -> OK" {
		t.Errorf("log:\n%s\nwant only the SET", got)
	}
}

func TestInline_commands(t *testing.T) {
	p, _ := setup(t)
	rc := dial(t, p)
	rc.c.Write([]byte("SET k v\r\n\r\nGET k\n"))
	if a, b := rc.read().short(), rc.read().short(); a != "OK" || b != `"v"` {
		t.Fatalf("replies %s, %s; want OK, \"v\"", a, b)
	}
	if got := short(p.Log()); got != "SET k V -> OK\nGET k -> \"v\"" {
		t.Errorf("log:\n%s", got)
	}
}

func TestClientReplyOff_passesThrough(t *testing.T) {
	p, _ := setup(t)
	rc := dial(t, p)
	rc.do("SET", "a", "1")
	rc.send("CLIENT", "REPLY", "OFF") // Redis answers neither this nor the SET
	rc.send("SET", "b", "1")
	if got := rc.do("CLIENT", "REPLY", "ON"); got != "OK" {
		t.Fatalf("CLIENT REPLY ON = %s", got)
	}
	if got := rc.do("GET", "b"); got != `"1"` {
		t.Errorf("GET b = %s, want \"1\"", got)
	}
	if got := short(p.Log()); got != "SET a 1 -> OK" {
		t.Errorf("log:\n%s\nwant only what came before CLIENT REPLY OFF", got)
	}
}

func TestListen_upstreamDown(t *testing.T) {
	dead := labtest.DeadAddr(t)
	p, err := Listen("127.0.0.1:0", dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rc := dial(t, p)
	if f := rc.read(); !strings.Contains(f.text, "cannot reach Redis at "+dead) {
		t.Errorf("read %s, want an error that names the upstream", f.short())
	}
	rc.closed()
}

// getThenDel runs a two-command operation, GET k then DEL k, and sends
// what each returned.
func getThenDel(t *testing.T, rdb *redis.Client) <-chan string {
	steps := make(chan string, 2)
	go func() {
		defer close(steps)
		v, err := rdb.Get(t.Context(), "k").Result()
		steps <- fmt.Sprintf("GET %s %v", v, err)
		n, err := rdb.Del(t.Context(), "k").Result()
		steps <- fmt.Sprintf("DEL %d %v", n, err)
	}()
	return steps
}

func TestPauseAfter_holdsTheNextCommand(t *testing.T) {
	tests := []struct {
		k    int
		held string
	}{
		{0, "GET k"},
		{1, "DEL k"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("after %d", tt.k), func(t *testing.T) {
			p, direct := setup(t)
			direct.Set(t.Context(), "k", "v", 0)
			rdb := client(t, p, redis.Options{})
			rdb.Ping(t.Context()) // connected: the handshake is not the operation's
			p.Arm(PauseAfter, tt.k)
			steps := getThenDel(t, rdb)
			held := struck(t, p)
			if held.String() != tt.held || held.Seq != tt.k+1 || held.Sent != 0 || held.Received == 0 {
				t.Fatalf("held %+v, want %s, command %d, received and not sent", held, tt.held, tt.k+1)
			}
			if tt.k == 1 {
				if got := <-steps; got != "GET v <nil>" {
					t.Fatalf("the GET before the pause returned %s, want v", got)
				}
			}
			select {
			case s := <-steps:
				t.Fatalf("%s returned while the proxy held it", s)
			default:
			}
			// Every connection is paused, not only the one it struck on.
			other := dial(t, p)
			other.send("SET", "other", "1")
			logged(t, p, tt.k+2)
			if !exists(t, direct, "k") || exists(t, direct, "other") {
				t.Fatal("a command ran while the proxy held it")
			}
			p.Resume()
			for s := range steps {
				if !strings.HasSuffix(s, "<nil>") {
					t.Errorf("after Resume: %s", s)
				}
			}
			if got := other.read().short(); got != "OK" {
				t.Errorf("the other connection's SET = %s after Resume", got)
			}
			if exists(t, direct, "k") || !exists(t, direct, "other") {
				t.Error("after Resume, the held commands did not run")
			}
		})
	}
}

func TestHoldReply_untilResume(t *testing.T) {
	p, direct := setup(t)
	rdb := client(t, p, redis.Options{})
	rdb.Ping(t.Context())
	p.Arm(HoldReply, 1)
	steps := make(chan string, 2)
	go func() {
		defer close(steps)
		steps <- fmt.Sprint(rdb.Set(t.Context(), "k", "v", 0).Err())
		v, err := rdb.Get(t.Context(), "k").Result()
		steps <- fmt.Sprint(v, " ", err)
	}()
	c := struck(t, p)
	if c.String() != "SET k V" || c.Reply != "OK" || c.Replied == 0 {
		t.Fatalf("struck at %+v, want SET k v, answered OK", c)
	}
	if v, _ := direct.Get(t.Context(), "k").Result(); v != "v" {
		t.Fatalf("k = %q while its reply is held, want the SET to have run", v)
	}
	select {
	case s := <-steps:
		t.Fatalf("SET returned %s while its reply was held", s)
	default:
	}
	// Another connection goes on.
	if v, err := client(t, p, redis.Options{}).Get(t.Context(), "k").Result(); v != "v" || err != nil {
		t.Fatalf("another connection's GET = %q, %v", v, err)
	}
	p.Resume()
	if a, b := <-steps, <-steps; a != "<nil>" || b != "v <nil>" {
		t.Errorf("after Resume: SET %s, GET %s", a, b)
	}
}

func TestLoseReply_closesOnlyThatClient(t *testing.T) {
	p, direct := setup(t)
	victim, bystander := dial(t, p), dial(t, p)
	victim.do("PING")
	bystander.do("PING")
	p.Arm(LoseReply, 1)
	victim.send("SET", "k", "v")
	if c := struck(t, p); c.String() != "SET k V" || c.Reply != "OK" {
		t.Fatalf("struck at %+v, want SET k v, answered OK", c)
	}
	victim.closed()
	if v, _ := direct.Get(t.Context(), "k").Result(); v != "v" {
		t.Fatalf("k = %q, want the SET whose reply was lost to have run", v)
	}
	if got := bystander.do("GET", "k"); got != `"v"` {
		t.Errorf("the other connection's GET = %s, want \"v\"", got)
	}
}

// A caller that sees the client fail from a lost reply must find Struck
// ready: the judge tells "the fault struck" from "the call ended first" by
// it, and a lost reply ends the call at once.
func TestLoseReply_struckBeforeTheClose(t *testing.T) {
	p, _ := setup(t)
	victim := dial(t, p)
	for i := range 50 {
		p.Arm(LoseReply, 1)
		victim.send("SET", "k", "v")
		victim.closed()
		select {
		case c, ok := <-p.Struck():
			if !ok || c.Name != "SET" {
				t.Fatalf("try %d: Struck gave %+v (ok %v), want the SET", i, c, ok)
			}
		default:
			t.Fatalf("try %d: the connection closed before Struck had the command", i)
		}
		victim = dial(t, p)
	}
}

func TestKillAfter_holdsTheReplyForGood(t *testing.T) {
	p, direct := setup(t)
	victim, bystander := dial(t, p), dial(t, p)
	p.Arm(KillAfter, 1)
	victim.send("SET", "k", "v")
	if c := struck(t, p); c.String() != "SET k V" || c.Reply != "OK" {
		t.Fatalf("struck at %+v, want SET k v, answered OK", c)
	}
	p.Resume() // lets go a pause or a held reply, never a killed one
	if got := bystander.do("GET", "k"); got != `"v"` {
		t.Fatalf("the other connection's GET = %s, want \"v\": the SET ran", got)
	}
	victim.c.Close() // the caller kills the client; the proxy lets its connection go
	waitFor(t, "the killed client's connection closed", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return len(p.conns) == 1
	})
	if !exists(t, direct, "k") || len(p.Log()) != 2 {
		t.Errorf("log:\n%s\nwant the SET and the other's GET", short(p.Log()))
	}
}

func TestFreeze_thawsInOrder(t *testing.T) {
	p, direct := setup(t)
	a, b := dial(t, p), dial(t, p)
	p.Freeze()
	a.send("SET", "a", "1")
	logged(t, p, 1)
	b.send("SET", "b", "1")
	logged(t, p, 2)
	if exists(t, direct, "a") || exists(t, direct, "b") {
		t.Fatal("a command ran while frozen")
	}
	p.Thaw()
	if ra, rb := a.read().short(), b.read().short(); ra != "OK" || rb != "OK" {
		t.Fatalf("after Thaw: %s, %s", ra, rb)
	}
	log := p.Log()
	if log[0].Sent == 0 || log[1].Sent < log[0].Sent {
		t.Errorf("sent at %d and %d: want in the order received", log[0].Sent, log[1].Sent)
	}
}

func TestDrop_losesWhatWasHeld(t *testing.T) {
	p, direct := setup(t)
	a := dial(t, p)
	p.Freeze()
	a.send("SET", "a", "1")
	logged(t, p, 1)
	p.Drop()
	a.closed()
	p.Thaw()
	if exists(t, direct, "a") {
		t.Error("a command held when the connections dropped ran after all")
	}
	if got := dial(t, p).do("GET", "a"); got != "(nil)" {
		t.Errorf("a new connection after Drop: GET a = %s", got)
	}
}

func TestArm_startsANewCount(t *testing.T) {
	p, _ := setup(t)
	rc := dial(t, p)
	rc.do("SET", "k", "1")
	before := p.Struck()
	p.Arm(LoseReply, 5)
	if _, ok := <-before; ok {
		t.Error("the channel of a fault that never struck gave a command")
	}
	rc.do("GET", "k")
	if log := p.Log(); len(log) != 1 || log[0].Seq != 1 || log[0].Name != "GET" {
		t.Errorf("log after Arm: %+v, want the GET alone, as command 1", log)
	}
}

func TestSetUpstream_newConnectionsOnly(t *testing.T) {
	one, two := labtest.StartRedis(t), labtest.StartRedis(t)
	p := proxyTo(t, one)
	first := dial(t, p)
	first.do("SET", "x", "1")
	p.SetUpstream(two.Addr)
	dial(t, p).do("SET", "x", "2")
	if got := first.do("GET", "x"); got != `"1"` {
		t.Errorf("the connection opened before SetUpstream reads x = %s, want \"1\"", got)
	}
	if v := two.Client(t).Get(t.Context(), "x").Val(); v != "2" {
		t.Errorf("the new upstream has x = %q, want 2", v)
	}
}

func TestBound_closesWithAReason(t *testing.T) {
	big := strings.Repeat("x", 2000)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"a command", []string{"SET", "k", big}, "wire: a command larger than 1024 bytes"},
		{"a reply", []string{"GET", "big"}, "wire: a reply larger than 1024 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := labtest.StartRedis(t)
			srv.Client(t).Set(t.Context(), "big", big, 0)
			p, err := listen("127.0.0.1:0", srv.Addr, false, 1024)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			rc := dial(t, p)
			if got := rc.do(tt.args...); !strings.Contains(got, tt.want) {
				t.Errorf("reply %s, want an error that says %q", got, tt.want)
			}
			rc.closed()
		})
	}
}

// replicate starts a primary, a raw proxy in front of it, and a replica
// of the primary through the proxy, in sync; it returns clients of both.
func replicate(t *testing.T) (p *Proxy, primary, replica *redis.Client) {
	t.Helper()
	srv := labtest.StartRedis(t)
	p, err := ListenRaw("127.0.0.1:0", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	host, port, _ := net.SplitHostPort(p.Addr())
	rs := labtest.StartRedis(t, "--replicaof", host, port)
	primary, replica = srv.Client(t), rs.Client(t)
	linkUp(t, replica)
	return p, primary, replica
}

func linkUp(t *testing.T, replica *redis.Client) {
	t.Helper()
	waitFor(t, "the replica's link up", func() bool {
		return strings.Contains(replica.Info(t.Context(), "replication").Val(), "master_link_status:up")
	})
}

func TestRaw_cutPartitionsAReplica(t *testing.T) {
	p, primary, replica := replicate(t)
	ctx := t.Context()
	primary.Set(ctx, "before", "1", 0)
	waitFor(t, "the write replicated", func() bool { return replica.Get(ctx, "before").Val() == "1" })
	p.Cut()
	primary.Set(ctx, "after", "1", 0)
	if n := primary.Wait(ctx, 1, 200*time.Millisecond).Val(); n != 0 {
		t.Errorf("WAIT: %d replicas acknowledged a write made after Cut, want 0", n)
	}
	if replica.Exists(ctx, "after").Val() != 0 {
		t.Error("a write made after Cut reached the replica")
	}
	p.Drop()
	waitFor(t, "the replica's link down", func() bool {
		return strings.Contains(replica.Info(ctx, "replication").Val(), "master_link_status:down")
	})
	if len(p.Log()) != 0 {
		t.Errorf("a raw proxy counted %v", p.Log())
	}
}

func TestRaw_dropThenReconnect(t *testing.T) {
	p, primary, replica := replicate(t)
	ctx := t.Context()
	p.Drop()
	waitFor(t, "the replica to connect again", func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.accepted >= 2
	})
	linkUp(t, replica)
	primary.Set(ctx, "again", "1", 0)
	waitFor(t, "a write after Drop replicated", func() bool { return replica.Get(ctx, "again").Val() == "1" })
}

// proxyGoroutines counts the goroutines running the proxy's code.
func proxyGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "wire.(*Proxy)") || strings.Contains(g, "wire.(*conn)") {
			n++
		}
	}
	return n
}

func TestClose_leavesNothing(t *testing.T) {
	srv := labtest.StartRedis(t)
	direct := srv.Client(t)
	p, err := Listen("127.0.0.1:0", srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	client(t, p, redis.Options{}).Ping(t.Context()) // idle in go-redis's pool
	sub := dial(t, p)                               // passed through
	sub.do("SUBSCRIBE", "ch")
	p.Arm(HoldReply, 1) // a reply held
	dial(t, p).send("SET", "a", "1")
	struck(t, p)
	p.Freeze() // a command held
	dial(t, p).send("SET", "b", "1")
	logged(t, p, 2)
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	waitFor(t, "the proxy's goroutines to end", func() bool { return proxyGoroutines() == 0 })
	if c, err := net.Dial("tcp", p.Addr()); err == nil {
		c.Close()
		t.Error("the proxy's port still accepts connections after Close")
	}
	sub.closed()
	waitFor(t, "Redis to see the proxy's connections closed", func() bool {
		return strings.Count(direct.ClientList(t.Context()).Val(), "\n") == 1 // this client's alone
	})
}

// A client that knows only the proxy's address has the rights of the
// user the proxy logs in as, and nothing more; a password the server
// refuses is the client's first reply, in one line.
func TestListenAs_logsEveryConnectionIn(t *testing.T) {
	srv := labtest.StartRedis(t)
	direct := srv.Client(t)
	if err := direct.Do(t.Context(), "ACL", "SETUSER", "ana", "on", ">secret", "~ana:*", "+@all", "-flushall").Err(); err != nil {
		t.Fatal(err)
	}
	p, err := ListenAs("127.0.0.1:0", srv.Addr, "ana", "secret")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	rdb := client(t, p, redis.Options{})
	if who, err := rdb.Do(t.Context(), "ACL", "WHOAMI").Text(); err != nil || who != "ana" {
		t.Errorf("ACL WHOAMI = %q, %v; want ana", who, err)
	}
	if err := rdb.Set(t.Context(), "ana:k", "v", 0).Err(); err != nil {
		t.Errorf("SET of one of ana's keys: %v", err)
	}
	for _, cmd := range [][]any{{"SET", "bob:k", "v"}, {"FLUSHALL"}} {
		if err := rdb.Do(t.Context(), cmd...).Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("%v as ana: %v, want NOPERM", cmd, err)
		}
	}

	wrong, err := ListenAs("127.0.0.1:0", srv.Addr, "ana", "guess")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wrong.Close() })
	err = client(t, wrong, redis.Options{}).Ping(t.Context()).Err()
	if err == nil || !strings.Contains(err.Error(), "the login as ana was refused: WRONGPASS") || strings.Contains(err.Error(), "guess") {
		t.Errorf("PING through a proxy with the wrong password: %v", err)
	}
}

// Each command is logged as the user its connection was authenticated as
// when it ran: AUTH changes the user once it succeeds, RESET returns to
// the default user.
func TestUser_followsAuthAndReset(t *testing.T) {
	p, _ := setup(t, "--user", "alice", "on", ">secret", "~*", "&*", "+@all")
	rc := dial(t, p)
	for _, args := range [][]string{{"GET", "k"}, {"AUTH", "alice", "wrong"}, {"GET", "k"}, {"AUTH", "alice", "secret"}, {"GET", "k"}, {"RESET"}, {"GET", "k"}} {
		rc.do(args...)
	}
	var users []string
	for _, c := range p.Log() {
		users = append(users, c.User)
	}
	if got, want := strings.Join(users, " "), "default default alice default"; got != want {
		t.Errorf("the GETs ran as %q, want %q", got, want)
	}
}
