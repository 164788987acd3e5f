//go:build unix

package drill

// The network of the partition nemesis: three hosts, each a Linux network
// namespace of the drill's own, on two networks of their own.
//
//   - The LAN (198.18.K.0/24): a bridge that joins the hosts to each other
//     (host i is 198.18.K.i+1). Redis, its replicas and the Sentinels talk
//     over it, and the partition cuts it: the veth of the isolated host
//     goes down, and every process keeps running.
//   - The uplink (198.19.K.0/24): a second bridge, on which each host
//     reaches the machine (198.19.K.254) and nothing else (its ports are
//     isolated from each other). PostgreSQL is reached over it, through a
//     forwarder the drill runs on 198.19.K.254, and the drill itself calls
//     the servers over it. The partition never cuts it: the isolated
//     spender still writes to PostgreSQL, which is the point.
//
// Both ranges are RFC 2544's, set aside for network tests. The names
// derive from the run's prefix (two drills never share a prefix, see
// TakePrefix) and fit Linux's 15 characters: "wl" and 8 hex digits, then
// "l" or "u" for a bridge and the host's number for its veth.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Hosts is the number of hosts of the partition nemesis.
const Hosts = 3

// ErrNoNetns is returned by CanPartition where the drill cannot make
// network namespaces.
var ErrNoNetns = errors.New("drill: the partition nemesis needs root and iproute2's ip")

// CanPartition reports whether this machine lets the drill make network
// namespaces: Linux, root, and ip on PATH. The error says why not and how.
func CanPartition() error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("%w: network namespaces are Linux's, and this is %s (run it on Linux as root)", ErrNoNetns, runtime.GOOS)
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return fmt.Errorf("%w: ip is not on PATH (install iproute2: apt-get install iproute2)", ErrNoNetns)
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: it runs as uid %d (run it as root, e.g. sudo -E go run ./cmd/drill -nemesis partition)", ErrNoNetns, os.Geteuid())
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return fmt.Errorf("%w: this system has no network namespaces (Linux only)", ErrNoNetns)
	}
	return nil
}

// Net is the drill's network for one run: made by MakeNet, removed by
// Remove.
type Net struct {
	tag   string // wl + 8 hex digits
	k     int    // the third byte of both ranges
	fwd   *Proxy // PostgreSQL, on the uplink
	hosts [Hosts]string
}

// NetTag is the name stem of a prefix's network objects: "wl" and the
// FNV-1a hash of the prefix in 8 hex digits.
func NetTag(prefix string) string {
	h := fnv.New32a()
	h.Write([]byte(prefix))
	return fmt.Sprintf("wl%08x", h.Sum32())
}

// Namespace is the name of host i's network namespace.
func (n *Net) Namespace(i int) string { return fmt.Sprintf("walletlock-%s-h%d", n.tag, i) }

// LAN is host i's address on the LAN, where its servers listen.
func (n *Net) LAN(i int) string { return fmt.Sprintf("198.18.%d.%d", n.k, i+1) }

// Uplink is host i's address on the uplink, where the drill calls its
// servers: the partition leaves it up, so host 0's too.
func (n *Net) Uplink(i int) string { return fmt.Sprintf("198.19.%d.%d", n.k, i+1) }

func (n *Net) lanBridge() string    { return n.tag + "l" }
func (n *Net) uplinkBridge() string { return n.tag + "u" }
func (n *Net) lanVeth(i int) string { return fmt.Sprintf("%sl%d", n.tag, i) }
func (n *Net) upVeth(i int) string  { return fmt.Sprintf("%su%d", n.tag, i) }

func ipCmd(args ...string) *exec.Cmd { return exec.Command("ip", args...) }

// links are the interfaces the run makes in the machine's namespace.
func (n *Net) links() []string {
	l := []string{n.lanBridge(), n.uplinkBridge()}
	for i := range Hosts {
		l = append(l, n.lanVeth(i), n.upVeth(i))
	}
	return l
}

// ip runs ip with args, bounded by a few seconds whatever ctx says (a
// clean-up must run after Ctrl-C too).
func ip(args ...string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("drill: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// MakeNet makes the network of a run on prefix: it first removes what a
// drill on the same prefix left when it was killed (SIGKILL; it holds the
// prefix's lease, so nothing of a live run) and says so in left.
func MakeNet(prefix, pgAddr string) (n *Net, left string, err error) {
	n = &Net{tag: NetTag(prefix), k: -1}
	for i := range Hosts {
		n.hosts[i] = n.Namespace(i)
	}
	if found := n.leftovers(); len(found) > 0 {
		n.Remove()
		left = fmt.Sprintf("removed the network a killed drill on this prefix left: %s", strings.Join(found, ", "))
	}
	if n.k, err = freeRange(NetTag(prefix)); err != nil {
		return nil, left, err
	}
	defer func() {
		if err != nil {
			n.Remove()
		}
	}()
	steps := [][]string{
		{"link", "add", n.lanBridge(), "type", "bridge"},
		{"link", "add", n.uplinkBridge(), "type", "bridge"},
		{"addr", "add", fmt.Sprintf("198.18.%d.254/24", n.k), "dev", n.lanBridge()},
		{"addr", "add", fmt.Sprintf("198.19.%d.254/24", n.k), "dev", n.uplinkBridge()},
		{"link", "set", n.lanBridge(), "up"},
		{"link", "set", n.uplinkBridge(), "up"},
	}
	for i := range Hosts {
		ns := n.Namespace(i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", n.lanVeth(i), "type", "veth", "peer", "name", "lan0", "netns", ns},
			[]string{"link", "add", n.upVeth(i), "type", "veth", "peer", "name", "up0", "netns", ns},
			[]string{"link", "set", n.lanVeth(i), "master", n.lanBridge(), "up"},
			[]string{"link", "set", n.upVeth(i), "master", n.uplinkBridge(), "up"},
			[]string{"link", "set", "dev", n.upVeth(i), "type", "bridge_slave", "isolated", "on"},
			[]string{"-n", ns, "addr", "add", n.LAN(i) + "/24", "dev", "lan0"},
			[]string{"-n", ns, "addr", "add", n.Uplink(i) + "/24", "dev", "up0"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "link", "set", "lan0", "up"},
			[]string{"-n", ns, "link", "set", "up0", "up"},
		)
	}
	for _, s := range steps {
		if err = ip(s...); err != nil {
			return nil, left, err
		}
	}
	if n.fwd, err = listenProxy(fmt.Sprintf("198.19.%d.254:0", n.k), pgAddr); err != nil {
		return nil, left, err
	}
	return n, left, nil
}

// freeRange picks the third byte K of both ranges: the one the tag's hash
// points at, or the next one no interface of the machine uses.
func freeRange(tag string) (int, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, fmt.Errorf("drill: list the machine's addresses: %w", err)
	}
	used := map[int]bool{}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil && v4[0] == 198 && (v4[1] == 18 || v4[1] == 19) {
				used[int(v4[2])] = true
			}
		}
	}
	h, _ := strconv.ParseUint(tag[2:], 16, 32)
	for i := range 254 {
		if k := 1 + (int(h)+i)%254; !used[k] {
			return k, nil
		}
	}
	return 0, errors.New("drill: no free /24 left in 198.18.0.0/15 for the partition's network")
}

// leftovers names the run's namespaces and links that exist now.
func (n *Net) leftovers() []string {
	var found []string
	out, _ := ipCmd("netns", "list").Output()
	for _, ns := range n.hosts {
		if bytes.Contains(out, []byte(ns)) {
			found = append(found, "namespace "+ns)
		}
	}
	for _, l := range n.links() {
		if ipCmd("link", "show", "dev", l).Run() == nil {
			found = append(found, "link "+l)
		}
	}
	return found
}

// Remove deletes the namespaces (which takes their veths with them) and
// the bridges, and stops the forwarder. Kill the processes first: a
// namespace lives on while a process runs in it. It returns what it could
// not remove.
func (n *Net) Remove() error {
	if n.fwd != nil {
		n.fwd.Close()
	}
	var errs []error
	list, _ := ipCmd("netns", "list").Output()
	for _, ns := range n.hosts {
		if bytes.Contains(list, []byte(ns)) {
			if err := ip("netns", "del", ns); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for _, l := range n.links() {
		if ipCmd("link", "show", "dev", l).Run() == nil {
			if err := ip("link", "del", l); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Cut takes host i's LAN link down: it can reach no other host, while its
// uplink stays up.
func (n *Net) Cut(i int) error { return ip("link", "set", n.lanVeth(i), "down") }

// Heal brings host i's LAN link up again.
func (n *Net) Heal(i int) error { return ip("link", "set", n.lanVeth(i), "up") }

// Command returns a command that runs name with args in host i.
func (n *Net) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Namespace(i), name}, args...)...)
}

// DatabaseURL returns the PostgreSQL URL raw with its host and port
// replaced by the forwarder's on the uplink, for a process in a host.
func (n *Net) DatabaseURL(raw string) (string, error) {
	return withHostPort(raw, n.fwd.Addr)
}

// PostgresAddr returns the host:port that the PostgreSQL URL raw names, for
// the forwarder. A Unix socket cannot be forwarded to another namespace.
func PostgresAddr(raw string) (string, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return "", errors.New("drill: DATABASE_URL is not a valid PostgreSQL URL")
	}
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") {
		return "", errors.New("drill: the partition nemesis reaches PostgreSQL over TCP, and DATABASE_URL names a Unix socket: give it host=127.0.0.1")
	}
	return net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))), nil
}

// withHostPort replaces the host and port of a PostgreSQL URL, in either
// of its forms: postgres://user:pw@host:port/db?... or "host=... port=...".
// (sslmode=verify-full would then check the certificate against the new
// address: the drill's servers run without TLS.)
func withHostPort(raw, hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", errors.New("drill: DATABASE_URL is not a valid PostgreSQL URL")
		}
		u.Host = hostport
		q := u.Query()
		for _, k := range []string{"host", "hostaddr", "port"} {
			q.Del(k)
		}
		u.RawQuery = q.Encode()
		return u.String(), nil
	}
	// Keyword/value: a later keyword wins.
	return raw + " host=" + host + " port=" + port, nil
}
