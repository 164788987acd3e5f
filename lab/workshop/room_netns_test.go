//go:build linux

package workshop

// The room as a room runs it: six laptops, each a network namespace with
// an address of its own on the room's network, and the room on the
// machine's address there. They hand in their documents and race; one
// of them tries what it must not, with its own credentials.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/internal/testenv"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/netns"
)

const helperEnv = "WALLETLOCK_ROOM_LAPTOP" // what the test binary does, started again in a laptop

// TestLaptop is not a test: the six-laptop test starts the test binary
// again inside a laptop's namespace to hand in a document (doc LINE
// FILE LABEL) or to try, as a laptop that joined, what it must not
// (attack LINE NAME VICTIM), printing each attempt and its error.
func TestLaptop(t *testing.T) {
	args := strings.Fields(os.Getenv(helperEnv))
	if len(args) == 0 {
		t.Skip("run by TestRoom_sixLaptops in a laptop's namespace")
	}
	ctx, line := t.Context(), args[1]
	switch args[0] {
	case "doc":
		raw, err := os.ReadFile(args[2])
		if err != nil {
			t.Fatal(err)
		}
		var d Doc
		json.Unmarshal(raw, &d)
		d.Host = args[3]
		if err := SendDoc(ctx, line, &d); err != nil {
			t.Fatal(err)
		}
	case "attack":
		name, victim := args[2], args[3]
		var c Creds
		ask, _ := json.Marshal(map[string]string{"name": name})
		if err := call(ctx, line, "/join", ask, &c, nil); err != nil {
			t.Fatal(err)
		}
		say := func(what string, err error) { fmt.Printf("ATTEMPT %s: %v\n", what, err) }
		rdb := redis.NewClient(&redis.Options{Addr: c.Redis, Username: c.User, Password: c.Password, MaxRetries: -1})
		defer rdb.Close()
		say("FLUSHALL", rdb.FlushAll(ctx).Err())
		say("GET "+victim+"'s key", rdb.Get(ctx, "room:"+victim+":lock:{wallet}").Err())
		say("DEL "+victim+"'s key", rdb.Del(ctx, "room:"+victim+":lock:{wallet}").Err())
		say("KEYS *", rdb.Keys(ctx, "*").Err())
		pool, err := pgxpool.New(ctx, c.Postgres)
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		var bal int64
		owner := ownerOf("room-" + victim)
		say("SELECT "+victim+"'s wallet", pool.QueryRow(ctx, "SELECT balance FROM walletlock_wallets WHERE owner = $1", owner).Scan(&bal))
		tag, err := pool.Exec(ctx, "UPDATE walletlock_wallets SET balance = 0 WHERE owner = $1", owner)
		say("UPDATE "+victim+"'s wallet", fmt.Errorf("%d rows changed (%v)", tag.RowsAffected(), err))
		_, err = pool.Exec(ctx, "DELETE FROM walletlock_wallets")
		say("DELETE every wallet", err)
		var big bytes.Buffer
		big.WriteString(`{"host":"` + name + `","go":"x","steps":{},"pad":"` + strings.Repeat("x", maxDoc) + `"}`)
		var ctl bytes.Buffer
		doc(name + "\x1b]0;owned\x07").WriteJSON(&ctl)
		var plain bytes.Buffer
		doc(name).WriteJSON(&plain)
		say("a document without the code", call(ctx, strings.Replace(line, "/", "/not-", 1), "/doc", plain.Bytes(), nil, nil))
		say("an oversized document", call(ctx, line, "/doc", big.Bytes(), nil, nil))
		say("a document with control characters", call(ctx, line, "/doc", ctl.Bytes(), nil, nil))
	}
}

// laptop starts the test binary, or exe, in host i of n.
func inLaptop(t *testing.T, n *netns.Net, i int, helper string, exe string, args ...string) *exec.Cmd {
	t.Helper()
	if exe == "" {
		exe, args = os.Args[0], []string{"-test.run=^TestLaptop$", "-test.v"}
	}
	cmd := n.Command(i, exe, args...)
	cmd.Env = append(os.Environ(), helperEnv+"="+helper)
	return cmd
}

func TestRoom_sixLaptops(t *testing.T) {
	if testing.Short() {
		t.Skip("six laptops hand in their documents and race two rounds: not with -short")
	}
	if err := netns.CanPartition(); err != nil {
		if os.Getenv("CI") != "" { // CI runs as root: the room must be tested
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx := t.Context()
	root, lab, err := harness.Repo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "workshop")
	if out, err := exec.Command("go", "build", "-C", lab, "-o", exe, "./cmd/workshop").CombinedOutput(); err != nil {
		t.Fatalf("build the workshop: %v\n%s", err, out)
	}
	n, _, err := netns.MakeNetOf("test:room", 6, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // last: after every process in it is gone
		if err := n.Remove(); err != nil {
			t.Error(err)
		}
	})
	old := filepath.Join(lab, "cmd", "workshop", "testdata", "workshop-lab-b.json") // a file of an earlier version, by hand
	r, dir := openRoomAt(t, n.Machine()+":0", old)
	if err := r.StartRace(ctx, 8*time.Second, HouseLocks); err != nil {
		testenv.Missing(t, fmt.Errorf("the race's servers: %w", err))
	}
	addr, _, _ := strings.Cut(r.Line, "/")
	listensOnly(t, n.Machine())

	// Each laptop hands in its document; the page shows them as they come.
	shots := os.Getenv("WALLETLOCK_ROOM_SHOTS") // a folder to keep the screenshots in
	if shots == "" {
		shots = t.TempDir()
	}
	src := filepath.Join(lab, "cmd", "workshop", "testdata", "workshop-lab-e.json")
	for i := range 6 {
		if out, err := inLaptop(t, n, i, fmt.Sprintf("doc %s %s laptop-%d", r.Line, src, i+1), "").CombinedOutput(); err != nil {
			t.Fatalf("laptop-%d hands in its document: %v\n%s", i+1, err, out)
		}
		if i == 2 {
			screenshot(t, "http://"+addr+"/", filepath.Join(shots, "room-3-of-6.png"))
		}
	}
	saved := map[string][]byte{}
	for i := range 6 {
		name := fmt.Sprintf("workshop-laptop-%d.json", i+1)
		if saved[name], err = os.ReadFile(filepath.Join(dir, name)); err != nil {
			t.Errorf("laptop-%d's document was not saved: %v", i+1, err)
		}
	}

	// They race: five with the article's lock, one with a mutant of it.
	out := runRacers(t, r, map[string]string{})
	for i := range 6 {
		lock := "lock"
		if i == 5 {
			lock = "mutant:del-no-token"
		}
		cmd := inLaptop(t, n, i, "", exe, "-race", "-room", r.Line, "-host", fmt.Sprintf("laptop-%d", i+1), "-lock", lock)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	waitFor(t, "six laptops ready", func() bool { return out.count("spenders ready") == 6+len(HouseLocks) })

	// Laptop 6 tries what it must not: each attempt is refused.
	attempts, err := inLaptop(t, n, 5, fmt.Sprintf("attack %s laptop-6 laptop-1", r.Line), "").CombinedOutput()
	if err != nil {
		t.Fatalf("laptop-6's attempts: %v\n%s", err, attempts)
	}
	refused := map[string]string{"FLUSHALL": "NOPERM", "GET laptop-1's key": "NOPERM", "DEL laptop-1's key": "NOPERM", "KEYS *": "NOPERM",
		"SELECT laptop-1's wallet": "no rows", "UPDATE laptop-1's wallet": "0 rows changed", "DELETE every wallet": "permission denied",
		"a document without the code": "no join code", "an oversized document": "larger than 256 KiB",
		"a document with control characters": "control character (U+001B)"}
	sc := bufio.NewScanner(bytes.NewReader(attempts))
	for sc.Scan() {
		what, got, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "ATTEMPT "), ": ")
		if want, known := refused[what]; ok && known {
			if !strings.Contains(got, want) {
				t.Errorf("laptop-6: %s: %s, want it refused with %q", what, got, want)
			}
			t.Logf("laptop-6: %s: %s", what, got)
			delete(refused, what)
		}
	}
	for what := range refused {
		t.Errorf("laptop-6 did not try %s", what)
	}

	one, err := r.RunRound(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	two, err := r.RunRound(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if got := row(one, fmt.Sprintf("laptop-%d", i+1)); got.Lost || got.Accepted == 0 {
			t.Errorf("round 1, laptop-%d: %s (%s), want its fenced writes to keep the money", i+1, got.Check, got.Verdict)
		}
	}
	for lock, lost := range map[string]bool{"house-lock": true, "house-mutant": true, "house-fenced": false} {
		if got := row(one, lock); got.Lost != lost {
			t.Errorf("round 1, %s: %s, want lost %v", lock, got.Check, lost)
		}
	}
	if !two.Lost || len(two.Story) == 0 {
		t.Errorf("round 2: %s, story %q: want the one wallet to lose money, and the story of how", two.Check, two.Story)
	}
	for _, r := range append(one.Rows, two.Rows...) {
		t.Logf("%s | %s | %d | %s | %s | %s", r.Lock, r.Spends, r.Accepted, r.Stops, r.Check, r.Verdict)
	}
	for _, s := range two.Story {
		t.Log("round 2:", s)
	}
	screenshot(t, "http://"+addr+"/", filepath.Join(shots, "room-six-laptops.png"))

	// Nothing was lost: every document is as it was handed in, and the
	// page shows all six beside the file of before.
	for name, b := range saved {
		if now, _ := os.ReadFile(filepath.Join(dir, name)); !bytes.Equal(now, b) {
			t.Errorf("%s changed", name)
		}
	}
	p, _ := page(t, r)
	for _, want := range []string{">laptop-1<", ">laptop-6<", ">lab-b<", "refused a document from " + n.Uplink(5), "The race is over."} {
		if !strings.Contains(p, want) {
			t.Errorf("the page does not show %q", want)
		}
	}
}

// openRoomAt is openRoom on addr.
func openRoomAt(t *testing.T, addr string, files ...string) (*Room, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := OpenRoom(addr, dir, files)
	if err != nil {
		t.Fatal(err)
	}
	go r.Serve()
	t.Cleanup(r.Close)
	return r, dir
}

// screenshot takes one of url in headless chromium, into file, and
// checks it shows something; without chromium it does nothing.
func screenshot(t *testing.T, url, file string) {
	t.Helper()
	browser, err := exec.LookPath("chromium")
	if err != nil {
		t.Log("no chromium: no screenshot")
		return
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--window-size=1366,900", "--screenshot="+file, url)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	colours := map[uint32]bool{}
	for y := 0; y < img.Bounds().Dy(); y += 4 {
		for x := 0; x < img.Bounds().Dx(); x += 4 {
			r, g, b, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|b>>8] = true
		}
	}
	if len(colours) < 20 {
		t.Errorf("%s has %d colours: the page looks empty", file, len(colours))
	}
	t.Logf("screenshot: %s", file)
}

// listensOnly checks that every TCP socket this process and its children
// (the race's redis-server and PostgreSQL) listen on is on addr or on
// 127.0.0.1, by the kernel's tables.
func listensOnly(t *testing.T, addr string) {
	t.Helper()
	ours := map[string]bool{} // socket inodes
	pids := []int{os.Getpid()}
	for i := 0; i < len(pids); i++ { // and their children, found by their parent
		fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pids[i]))
		for _, fd := range fds {
			if l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pids[i], fd.Name())); err == nil && strings.HasPrefix(l, "socket:[") {
				ours[strings.Trim(l, "socket:[]")] = true
			}
		}
		procs, _ := os.ReadDir("/proc")
		for _, p := range procs {
			stat, err := os.ReadFile("/proc/" + p.Name() + "/stat")
			if err != nil {
				continue
			}
			f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
			if len(f) > 1 && f[1] == strconv.Itoa(pids[i]) {
				pid, _ := strconv.Atoi(p.Name())
				pids = append(pids, pid)
			}
		}
	}
	seen := 0
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		raw, _ := os.ReadFile(table)
		for _, l := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(l)
			if len(f) < 10 || f[3] != "0A" || !ours[f[9]] { // 0A: LISTEN
				continue
			}
			seen++
			host, _, _ := strings.Cut(f[1], ":")
			ip := hexIP(host)
			if !ip.Equal(net.ParseIP(addr)) && !ip.Equal(net.IPv4(127, 0, 0, 1)) {
				t.Errorf("the room listens on %v, beyond %s", ip, addr)
			}
		}
	}
	if seen < 5 { // the page, two proxies, Redis, PostgreSQL
		t.Errorf("found %d listening sockets of the room's, want at least 5", seen)
	}
}

// hexIP reads an address of /proc/net/tcp: little-endian words of hex.
func hexIP(h string) net.IP {
	var ip net.IP
	for i := 0; i+8 <= len(h); i += 8 {
		w, _ := strconv.ParseUint(h[i:i+8], 16, 32)
		ip = append(ip, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return ip
}
