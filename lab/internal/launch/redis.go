package launch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/internal/safe"
	"example.com/walletlock/lab/internal/env"
)

// ErrNoRedisServer is returned when redis-server is not on PATH.
var ErrNoRedisServer = errors.New("launch: redis-server not found on PATH: `make up` installs it (apt-get install redis-server, or brew install redis)")

// RedisBinary finds redis-server.
func RedisBinary() (string, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return "", ErrNoRedisServer
	}
	return bin, nil
}

// RedisVersion is the version `redis-server --version` names, such as
// "7.0.15", or "" when it names none.
func RedisVersion() string {
	bin, err := RedisBinary()
	if err != nil {
		return ""
	}
	out, _ := exec.Command(bin, "--version").Output()
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return safe.Line(v)
		}
	}
	return ""
}

// Redis is a redis-server of ours (or a Sentinel) on a loopback port,
// with no persistence.
type Redis struct {
	Addr string // 127.0.0.1:port
	Port int
	Bus  int  // the cluster bus port of a cluster node, else 0
	Log  *Log // what it wrote, across restarts

	name string
	dir  string
	args []string // the command line, to start it again
	tls  bool
	proc *Proc
	g    *Group
}

// StartRedis starts a redis-server in dir (its working directory) on a
// free loopback port, with extra arguments added to its command line
// (such as "--requirepass", "secret"), and waits until it answers.
func (g *Group) StartRedis(ctx context.Context, dir string, extra ...string) (*Redis, error) {
	return g.startRedis(ctx, dir, "redis-server", false, func(port int) ([]string, error) {
		return append(plain("--port", port), extra...), nil
	})
}

// StartReplica starts a redis-server that replicates the one at primary
// (host:port); see StartRedis.
func (g *Group) StartReplica(ctx context.Context, dir, primary string, extra ...string) (*Redis, error) {
	host, port, err := net.SplitHostPort(primary)
	if err != nil {
		return nil, fmt.Errorf("launch: replica of %q: %w", primary, err)
	}
	return g.StartRedis(ctx, dir, append([]string{"--replicaof", host, port}, extra...)...)
}

// StartTLSRedis starts a redis-server that speaks TLS only, with the
// certificate and key in the named files (the certificate is its CA too)
// and no client certificates asked for; see StartRedis.
func (g *Group) StartTLSRedis(ctx context.Context, dir, certFile, keyFile string, extra ...string) (*Redis, error) {
	return g.startRedis(ctx, dir, "redis-server (TLS)", true, func(port int) ([]string, error) {
		args := append(plain("--port", 0), "--tls-port", strconv.Itoa(port), "--tls-cert-file", certFile,
			"--tls-key-file", keyFile, "--tls-ca-cert-file", certFile, "--tls-auth-clients", "no")
		return append(args, extra...), nil
	})
}

// StartClusterNode starts a redis-server with cluster mode on, its node
// table in conf (in dir), a bus port of its own (Redis.Bus) and the given
// node timeout. A replica cut off from its master may still take over,
// and none migrates to another master.
func (g *Group) StartClusterNode(ctx context.Context, dir, conf string, nodeTimeout time.Duration, extra ...string) (*Redis, error) {
	// The bus port is given: port + 10000 may be taken, or past 65535.
	bus, err := FreePort()
	if err != nil {
		return nil, fmt.Errorf("launch: find a free port: %w", err)
	}
	s, err := g.StartRedis(ctx, dir, append([]string{"--cluster-enabled", "yes", "--cluster-config-file", conf,
		"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", strconv.Itoa(int(nodeTimeout.Milliseconds())),
		"--cluster-replica-validity-factor", "0", "--cluster-allow-replica-migration", "no"}, extra...)...)
	if err == nil {
		s.Bus = bus
	}
	return s, err
}

// StartSentinel starts a Sentinel in dir that monitors the primary at
// primary under the name master, with a quorum of 2 and the given
// down-after time. Its failover timeout is long, so that no sentinel
// "repairs" a replication link a caller cut on purpose.
func (g *Group) StartSentinel(ctx context.Context, dir, master, primary string, downAfter time.Duration) (*Redis, error) {
	host, pport, err := net.SplitHostPort(primary)
	if err != nil {
		return nil, fmt.Errorf("launch: sentinel of %q: %w", primary, err)
	}
	return g.startRedis(ctx, dir, "redis-sentinel", false, func(port int) ([]string, error) {
		conf, err := SentinelConf(dir, port, []string{"127.0.0.1"}, master, host, pport, downAfter)
		return []string{conf, "--sentinel"}, err
	})
}

// SentinelConf writes, in dir, the configuration file of a Sentinel on
// port, bound to binds, that monitors the primary at host:port under the
// name master, with a quorum of 2 and the given down-after time, and
// returns its path: a sentinel rewrites its file, so it needs one.
func SentinelConf(dir string, port int, binds []string, master, host, pport string, downAfter time.Duration) (string, error) {
	conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d-%d.conf", port, time.Now().UnixNano()))
	text := fmt.Sprintf("port %d\nbind %s\nprotected-mode no\nsentinel monitor %s %s %s 2\n"+
		"sentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 60000\n",
		port, strings.Join(binds, " "), master, host, pport, master, downAfter.Milliseconds(), master)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("launch: write %s: %w", conf, err)
	}
	return conf, nil
}

// AwaitInSync waits until every replica at addrs says
// master_link_status:up.
func AwaitInSync(ctx context.Context, addrs ...string) error {
	return await(ctx, "the replicas did not sync with the primary", func() string {
		for _, a := range addrs {
			c := adminClient(a)
			info, err := c.Info(ctx, "replication").Result()
			c.Close()
			if got := env.InfoField(info, "master_link_status"); got != "up" {
				return fmt.Sprintf("%s says master_link_status:%s (%v)", a, got, err)
			}
		}
		return ""
	})
}

// AwaitSentinels waits until every Sentinel at addrs, all monitoring
// master, knows the others and replicas replicas: before that, a failover
// may find no quorum to promote anyone.
func AwaitSentinels(ctx context.Context, master string, addrs []string, replicas int) error {
	return await(ctx, "the Sentinels did not find each other and the replicas", func() string {
		for _, a := range addrs {
			c := adminClient(a)
			peers, _ := c.Do(ctx, "SENTINEL", "SENTINELS", master).Slice()
			reps, err := c.Do(ctx, "SENTINEL", "REPLICAS", master).Slice()
			c.Close()
			if len(peers) != len(addrs)-1 || len(reps) != replicas {
				return fmt.Sprintf("%s knows %d of %d other Sentinels and %d of %d replicas (%v)", a, len(peers), len(addrs)-1, len(reps), replicas, err)
			}
		}
		return ""
	})
}

// plain is the start of a node's command line: loopback only, no
// persistence, and a replica's full copy at once, not after 5 s.
func plain(portFlag string, port int) []string {
	return []string{portFlag, strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--repl-diskless-sync-delay", "0"}
}

func (g *Group) startRedis(ctx context.Context, dir, kind string, tls bool, args func(port int) ([]string, error)) (*Redis, error) {
	var err error
	for range 3 { // a free port can be taken between asking and binding
		var port int
		if port, err = FreePort(); err != nil {
			return nil, fmt.Errorf("launch: find a free port: %w", err)
		}
		s := &Redis{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Port: port, Log: &Log{},
			name: kind + " " + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, tls: tls, g: g}
		if s.args, err = args(port); err != nil {
			return nil, err
		}
		if err = s.start(ctx); err == nil {
			return s, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
	}
	return nil, err
}

// start runs the server and waits, at most 10 s, until it answers.
func (s *Redis) start(ctx context.Context) error {
	bin, err := RedisBinary()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, s.args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = s.Log, s.Log
	from := s.Log.Len()
	p, err := s.g.Start(s.name, cmd)
	if err != nil {
		return err
	}
	s.proc = p
	if err := waitReady(ctx, p.exited, 10*time.Second, func() bool { return s.ready(from) }); err != nil {
		p.Kill(time.Second)
		return fmt.Errorf("launch: %s: %w: %s", s.name, err, s.Log.LastLine())
	}
	return nil
}

// ready reports whether the server answers a PING, or, over TLS, whether
// it said it accepts connections since the log was from bytes long.
func (s *Redis) ready(from int) bool {
	if s.tls {
		return strings.Contains(s.Log.String()[from:], "Ready to accept connections")
	}
	return Answers(s.Addr)
}

// Proc is the server's process: Pause, Resume, Kill.
func (s *Redis) Proc() *Proc { return s.proc }

// Restart kills the server (SIGKILL) and starts it again on the same port
// with the same arguments: with no persistence it comes back empty.
func (s *Redis) Restart(ctx context.Context) error {
	if !s.proc.Kill(3 * time.Second) {
		return fmt.Errorf("launch: %s did not die", s.proc)
	}
	return s.Start(ctx)
}

// Start starts a server that was killed again, on the same port with the
// same arguments.
func (s *Redis) Start(ctx context.Context) error {
	var err error
	for range 20 { // the port can take a moment to be free again
		if err = s.start(ctx); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
	return err
}

// Answers reports whether a Redis server at addr replies to a PING within
// a second, over a bare connection (a server that wants a password still
// answers, with an error).
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
