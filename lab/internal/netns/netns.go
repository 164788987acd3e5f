//go:build unix

// Package netns is the network of a partition: three hosts (or up to ten,
// MakeNetOf), each a Linux network namespace of the run's own, on two
// networks of their own.
//
//   - The LAN (198.18.K.0/24): a bridge that joins the hosts to each other
//     (host i is 198.18.K.i+1). Redis, its replicas and the Sentinels talk
//     over it, and the partition cuts it: the veth of the isolated host
//     goes down, and every process keeps running.
//   - The uplink (198.19.K.0/24): a second bridge, on which each host
//     reaches the machine (198.19.K.254) and nothing else (its ports are
//     isolated from each other). PostgreSQL is reached over it, through a
//     forwarder the run has on 198.19.K.254, and the run itself calls
//     the servers over it. The partition never cuts it: the isolated
//     holder still writes to PostgreSQL, which is the point.
//
// Both ranges are RFC 2544's, set aside for network tests. K is the
// run's network id, which it takes for itself (see claimNet), and the
// names carry it: the namespaces walletlock-netKKK-hI, the links "wln"
// and KKK, then "l" or "u" for a bridge and the host's number for its
// veth, within Linux's 15 characters.
package netns

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"example.com/walletlock/lab/internal/launch"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/lab/internal/wire"
)

// Hosts is the number of hosts of the partition nemesis.
const Hosts = 3

// maxHosts is the most hosts a network has: a host's number is one digit
// of its names.
const maxHosts = 10

// ErrNoNetns is returned by CanPartition where this process cannot make
// network namespaces.
var ErrNoNetns = errors.New("netns: a partition needs root and iproute2's ip")

// CanPartition reports whether this machine lets this process make network
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

// Net is the network of one run: made by MakeNet, removed by
// Remove.
type Net struct {
	id    int         // 1 to maxNets: the third byte of both ranges, and the names' number
	claim *os.File    // the id's claim, locked while the run lasts (see claimNet)
	mark  string      // the owner record on every namespace and link it made
	fwd   *wire.Proxy // PostgreSQL, on the uplink
}

// The ids of the runs' networks, and their claims.
//
// An id is taken, never derived from the prefix: ids derived from a
// hash collide (two prefixes once shared a network, and the second drill
// deleted the first one's while it ran). A run takes the first id
// whose claim file, netDir/net-NNN, it can lock (flock, which the kernel
// drops when the process dies, however it dies) and holds the lock
// until its network is gone. Only the holder of an id's lock makes or
// removes the namespaces and links named for that id; each of them
// carries the holder's owner record (see owner.go) as its alias (on its
// loopback, for a namespace), and nothing whose record names a live
// process is ever removed. So what a run finds under an id it has just
// locked was left by a dead one: it removes it, and says so.
const (
	netDir  = "/run/walletlock-drill"
	maxNets = 254
)

func claimPath(id int) string { return filepath.Join(netDir, fmt.Sprintf("net-%03d", id)) }

func netNamespace(id, i int) string { return fmt.Sprintf("walletlock-net%03d-h%d", id, i) }

// netLinks are the interfaces a run on id makes in the machine's
// namespace: two bridges, and a veth on each for every host.
func netLinks(id int) []string {
	stem := fmt.Sprintf("wln%03d", id)
	l := []string{stem + "l", stem + "u"}
	for i := range maxHosts {
		l = append(l, fmt.Sprintf("%sl%d", stem, i), fmt.Sprintf("%su%d", stem, i))
	}
	return l
}

// The names of the namespaces and links of every id, to find the ids a
// dead drill left.
var (
	nsName   = regexp.MustCompile(`^walletlock-net(\d{3})-h\d$`)
	linkName = regexp.MustCompile(`^wln(\d{3})[lu]\d?$`)
)

// Namespace is the name of host i's network namespace.
func (n *Net) Namespace(i int) string { return netNamespace(n.id, i) }

// LAN is host i's address on the LAN, where its servers listen.
func (n *Net) LAN(i int) string { return fmt.Sprintf("198.18.%d.%d", n.id, i+1) }

// Machine is the machine's address on the uplink, which every host
// reaches.
func (n *Net) Machine() string { return fmt.Sprintf("198.19.%d.254", n.id) }

// Uplink is host i's address on the uplink, where the run calls its
// servers: the partition leaves it up, so host 0's too.
func (n *Net) Uplink(i int) string { return fmt.Sprintf("198.19.%d.%d", n.id, i+1) }

func (n *Net) lanBridge() string    { return netLinks(n.id)[0] }
func (n *Net) uplinkBridge() string { return netLinks(n.id)[1] }
func (n *Net) lanVeth(i int) string { return netLinks(n.id)[2+2*i] }
func (n *Net) upVeth(i int) string  { return netLinks(n.id)[3+2*i] }

// ip runs ip with args, bounded by a few seconds whatever ctx says (a
// clean-up must run after Ctrl-C too), and returns what it printed.
func ip(args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ip", args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("netns: ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.Bytes(), nil
}

// MakeNet makes the network of a run on prefix. It takes the first free
// id (see claimNet); what a dead drill left under it, it removes first,
// and says so in left. The prefix only names the run in errors.
func MakeNet(prefix, pgAddr string) (n *Net, left string, err error) {
	return MakeNetOf(prefix, Hosts, pgAddr)
}

// MakeNetOf is MakeNet with hosts hosts, at most maxHosts, and the
// forwarder to PostgreSQL only when pgAddr is not "": a room of laptops
// that reach the machine (Machine) over the uplink.
func MakeNetOf(prefix string, hosts int, pgAddr string) (n *Net, left string, err error) {
	if hosts > maxHosts {
		return nil, "", fmt.Errorf("netns: %d hosts; a network has at most %d", hosts, maxHosts)
	}
	n = &Net{mark: launch.Self().String()}
	var removed []string
	for id := 1; id <= maxNets && n.claim == nil; id++ {
		f, err := claimNet(id)
		if err != nil {
			return nil, "", err
		}
		if f == nil {
			continue // a live run's
		}
		gone, err := clearNet(id, n.mark)
		removed = append(removed, gone...)
		if err == nil {
			err = rangeFree(id)
		}
		if err != nil { // not all ours to remove, or the range is someone else's: the next id
			releaseClaim(f)
			continue
		}
		if err := f.Truncate(0); err == nil {
			f.WriteAt([]byte(n.mark+"\n"), 0)
		}
		n.id, n.claim = id, f
	}
	if len(removed) > 0 {
		left = "removed the network a killed drill left: " + strings.Join(removed, ", ")
	}
	if n.claim == nil {
		return nil, left, fmt.Errorf("netns: no network id of %d is free for the partition of prefix %q: other runs hold them, or their address ranges are in use", maxNets, prefix)
	}
	made := n // the returns below name a nil *Net
	defer func() {
		if err != nil {
			made.Remove()
		}
	}()
	mark := func(args ...string) []string { return append(args, "alias", n.mark) }
	steps := [][]string{
		{"link", "add", n.lanBridge(), "type", "bridge"},
		mark("link", "set", "dev", n.lanBridge()),
		{"link", "add", n.uplinkBridge(), "type", "bridge"},
		mark("link", "set", "dev", n.uplinkBridge()),
		{"addr", "add", fmt.Sprintf("198.18.%d.254/24", n.id), "dev", n.lanBridge()},
		{"addr", "add", fmt.Sprintf("198.19.%d.254/24", n.id), "dev", n.uplinkBridge()},
		{"link", "set", n.lanBridge(), "up"},
		{"link", "set", n.uplinkBridge(), "up"},
	}
	for i := range hosts {
		ns := n.Namespace(i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			mark("-n", ns, "link", "set", "dev", "lo"),
			[]string{"link", "add", n.lanVeth(i), "type", "veth", "peer", "name", "lan0", "netns", ns},
			mark("link", "set", "dev", n.lanVeth(i)),
			[]string{"link", "add", n.upVeth(i), "type", "veth", "peer", "name", "up0", "netns", ns},
			mark("link", "set", "dev", n.upVeth(i)),
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
		if _, err = ip(s...); err != nil {
			return nil, left, err
		}
	}
	if pgAddr == "" {
		return n, left, nil
	}
	if n.fwd, err = wire.ListenRaw(n.Machine()+":0", pgAddr); err != nil {
		return nil, left, err
	}
	return n, left, nil
}

// claimNet locks id's claim file, and returns it; nil, nil when a live
// drill holds it. The lock is the file's at netDir: one locked after
// its last holder removed it (releaseClaim) is no claim, and is let go.
func claimNet(id int) (*os.File, error) {
	path := claimPath(id)
	for range 5 {
		if err := os.MkdirAll(netDir, 0o700); err != nil {
			return nil, fmt.Errorf("netns: make %s for the network's claims: %w", netDir, err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
		if errors.Is(err, os.ErrNotExist) {
			continue // netDir was removed in between (releaseClaim)
		}
		if err != nil {
			return nil, fmt.Errorf("netns: claim network %d: %w", id, err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, nil
			}
			return nil, fmt.Errorf("netns: claim network %d: %w", id, err)
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return f, nil
		}
		f.Close()
	}
	return nil, nil // it keeps changing hands: someone else's
}

// releaseClaim removes a claim file and lets go of its lock, then
// removes netDir if no claim is left in it.
func releaseClaim(f *os.File) {
	os.Remove(f.Name())
	f.Close()
	os.Remove(netDir) // only when empty
}

// netObj is a namespace or a link of some id, with the owner record it
// carries ("" for none).
type netObj struct{ kind, name, mark string }

// present lists the namespaces and links of id that exist now: those of
// netObjects that are named for id.
func present(id int) ([]netObj, error) {
	all, err := netObjects()
	return slices.DeleteFunc(all, func(o netObj) bool { return objID(o) != id }), err
}

// objID is the id a namespace or link of the runs is named for, 0 for
// anything else.
func objID(o netObj) int {
	re := linkName
	if o.kind == "namespace" {
		re = nsName
	}
	m := re.FindStringSubmatch(o.name)
	if m == nil {
		return 0
	}
	id, _ := strconv.Atoi(m[1])
	return id
}

// link is a link as ip -j link show lists it.
type link struct {
	Name  string `json:"ifname"`
	Alias string `json:"ifalias"`
}

// links lists the links ip -j link show finds with args.
func links(args ...string) ([]link, error) {
	out, err := ip(append([]string{"-j"}, args...)...)
	if err != nil {
		return nil, err
	}
	var l []link
	if err := json.Unmarshal(out, &l); err != nil {
		return nil, fmt.Errorf("netns: read ip link show: %w", err)
	}
	return l, nil
}

// netObjects lists the runs' namespaces and links on the machine, each
// with its owner record.
func netObjects() ([]netObj, error) {
	var found []netObj
	out, err := ip("-j", "netns", "list")
	if err != nil {
		return nil, err
	}
	var nss []struct {
		Name string `json:"name"`
	}
	if len(bytes.TrimSpace(out)) > 0 {
		if err := json.Unmarshal(out, &nss); err != nil {
			return nil, fmt.Errorf("netns: read ip netns list: %w", err)
		}
	}
	for _, ns := range nss {
		if !nsName.MatchString(ns.Name) {
			continue
		}
		// Its loopback carries the record. A namespace gone in between,
		// or one made and not yet marked, has none.
		mark := ""
		if lo, err := links("-n", ns.Name, "link", "show", "dev", "lo"); err == nil && len(lo) == 1 {
			mark = lo[0].Alias
		}
		found = append(found, netObj{"namespace", ns.Name, mark})
	}
	all, err := links("link", "show")
	if err != nil {
		return nil, err
	}
	for _, l := range all {
		if linkName.MatchString(l.Name) {
			found = append(found, netObj{"link", l.Name, l.Alias})
		}
	}
	return found, nil
}

// clearNet removes the namespaces and links of id, whose claim the
// caller holds, and returns what it removed. Each must be provably not a
// live drill's: it carries the record mine (the caller's own), or one of
// a dead process, or none (its maker died before it marked it: only the
// claim's holder makes it). If any carries a live process's record (its
// claim file was removed under it), or one that cannot be read, clearNet
// removes nothing and says so.
func clearNet(id int, mine string) ([]string, error) {
	objs, err := present(id)
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		if o.mark == "" || o.mark == mine {
			continue
		}
		if w, err := launch.ParseOwner(o.mark); err != nil || !w.Dead() {
			return nil, fmt.Errorf("netns: network %d is not ours to remove: %s %s belongs to %q", id, o.kind, o.name, o.mark)
		}
	}
	var removed []string
	var errs []error
	for _, o := range objs { // namespaces first: their veths go with them
		if o.kind == "namespace" {
			if _, err := ip("netns", "del", o.name); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, "namespace "+o.name)
		}
	}
	for _, o := range objs {
		if o.kind == "link" && exec.Command("ip", "link", "show", "dev", o.name).Run() == nil { // not gone with its namespace
			if _, err := ip("link", "del", o.name); err != nil {
				errs = append(errs, err)
				continue
			}
			removed = append(removed, "link "+o.name)
		}
	}
	return removed, errors.Join(errs...)
}

// RemoveDead removes the networks of runs that died: every id with
// a claim file or a namespace or link of its own, whose claim it can lock.
func RemoveDead() ([]string, error) {
	ids := map[int]bool{}
	files, _ := filepath.Glob(filepath.Join(netDir, "net-[0-9][0-9][0-9]"))
	for _, f := range files {
		if id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(f), "net-")); err == nil {
			ids[id] = true
		}
	}
	objs, err := netObjects()
	if err != nil {
		return nil, err
	}
	for _, o := range objs {
		ids[objID(o)] = true
	}
	var removed []string
	var errs []error
	mine := launch.Self().String()
	for id := range ids {
		if id < 1 || id > maxNets {
			continue
		}
		f, err := claimNet(id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if f == nil {
			continue // a live run's
		}
		gone, err := clearNet(id, mine)
		removed = append(removed, gone...)
		if err != nil {
			errs = append(errs, err)
		}
		releaseClaim(f)
	}
	sort.Strings(removed)
	return removed, errors.Join(errs...)
}

// rangeFree returns an error when an interface of the machine has an
// address in either range of id (198.18.id.0/24, 198.19.id.0/24): a
// network that is not the runs', or not yet removed.
func rangeFree(id int) error {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return fmt.Errorf("netns: list the machine's addresses: %w", err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil && v4[0] == 198 && (v4[1] == 18 || v4[1] == 19) && int(v4[2]) == id {
				return fmt.Errorf("netns: %v is in use", v4)
			}
		}
	}
	return nil
}

// Remove deletes the namespaces (which takes their veths with them) and
// the bridges, stops the forwarder, and gives the id back. Kill the
// processes first: a namespace lives on while a process runs in it. It
// returns what it could not remove; the id is then kept, until a later
// drill finds it dead.
func (n *Net) Remove() error {
	if n.fwd != nil {
		n.fwd.Close()
		n.fwd = nil
	}
	if n.claim == nil {
		return nil
	}
	_, err := clearNet(n.id, n.mark)
	if err == nil {
		releaseClaim(n.claim)
	} else {
		n.claim.Close() // the lock goes; the claim file says whose it was
	}
	n.claim = nil
	return err
}

// Cut takes host i's LAN link down: it can reach no other host, while its
// uplink stays up.
func (n *Net) Cut(i int) error {
	_, err := ip("link", "set", n.lanVeth(i), "down")
	return err
}

// Heal brings host i's LAN link up again.
func (n *Net) Heal(i int) error {
	_, err := ip("link", "set", n.lanVeth(i), "up")
	return err
}

// Command returns a command that runs name with args in host i.
func (n *Net) Command(i int, name string, args ...string) *exec.Cmd {
	return exec.Command("ip", append([]string{"netns", "exec", n.Namespace(i), name}, args...)...)
}

// DatabaseURL returns the PostgreSQL URL raw with its host and port
// replaced by the forwarder's on the uplink, for a process in a host.
func (n *Net) DatabaseURL(raw string) (string, error) {
	return withHostPort(raw, n.fwd.Addr())
}

// PostgresAddr returns the host:port that the PostgreSQL URL raw names, for
// the forwarder. A Unix socket cannot be forwarded to another namespace.
func PostgresAddr(raw string) (string, error) {
	cfg, err := pgxpool.ParseConfig(raw)
	if err != nil {
		return "", errors.New("netns: DATABASE_URL is not a valid PostgreSQL URL")
	}
	if strings.HasPrefix(cfg.ConnConfig.Host, "/") {
		return "", errors.New("netns: the partition nemesis reaches PostgreSQL over TCP, and DATABASE_URL names a Unix socket: give it host=127.0.0.1")
	}
	return net.JoinHostPort(cfg.ConnConfig.Host, strconv.Itoa(int(cfg.ConnConfig.Port))), nil
}

// withHostPort replaces the host and port of a PostgreSQL URL, in either
// of its forms: postgres://user:pw@host:port/db?... or "host=... port=...".
// (sslmode=verify-full would then check the certificate against the new
// address: the run's servers run without TLS.)
func withHostPort(raw, hostport string) (string, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(raw, "postgres://") || strings.HasPrefix(raw, "postgresql://") {
		u, err := url.Parse(raw)
		if err != nil {
			return "", errors.New("netns: DATABASE_URL is not a valid PostgreSQL URL")
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

// Server is a redis-server or a Sentinel in a host: Addr on the LAN, Ctl
// on the uplink, where the run calls it.
type Server struct {
	Addr, Ctl string
	Proc      *launch.Proc
}

// StartRedis starts a redis-server in host i, in dir, on port of both the
// host's addresses, with no persistence and args added to its command
// line, and waits until it answers on the uplink.
func (n *Net) StartRedis(ctx context.Context, g *launch.Group, dir string, i, port int, args ...string) (*Server, error) {
	p := strconv.Itoa(port)
	return n.start(ctx, g, dir, i, port, "redis-server", append([]string{"--port", p, "--bind", n.LAN(i), n.Uplink(i),
		"--protected-mode", "no", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0"}, args...))
}

// StartSentinel starts a Sentinel in host i, in dir, on port of both the
// host's addresses, that monitors the primary at host 0's LAN address
// and primaryPort under the name master (see launch.SentinelConf), and
// waits until it answers on the uplink.
func (n *Net) StartSentinel(ctx context.Context, g *launch.Group, dir string, i, port int, master string, primaryPort int, downAfter time.Duration) (*Server, error) {
	conf, err := launch.SentinelConf(dir, port, []string{n.LAN(i), n.Uplink(i)}, master, n.LAN(0), strconv.Itoa(primaryPort), downAfter)
	if err != nil {
		return nil, err
	}
	return n.start(ctx, g, dir, i, port, "redis-sentinel", []string{conf, "--sentinel"})
}

func (n *Net) start(ctx context.Context, g *launch.Group, dir string, i, port int, kind string, args []string) (*Server, error) {
	bin, err := launch.RedisBinary()
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: net.JoinHostPort(n.LAN(i), strconv.Itoa(port)), Ctl: net.JoinHostPort(n.Uplink(i), strconv.Itoa(port))}
	cmd := n.Command(i, bin, args...)
	cmd.Dir = dir
	var log launch.Log
	cmd.Stdout, cmd.Stderr = &log, &log
	if s.Proc, err = g.Start(fmt.Sprintf("%s %s (host %d)", kind, s.Addr, i), cmd); err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(10 * time.Second); !launch.Answers(s.Ctl); time.Sleep(50 * time.Millisecond) {
		if !s.Proc.Running() || time.Now().After(deadline) || ctx.Err() != nil {
			s.Proc.Kill(time.Second)
			return nil, fmt.Errorf("netns: %s in host %d did not start: %s", kind, i, log.LastLine())
		}
	}
	return s, nil
}
