package workshop

// The race (make room RACE=1, make race ROOM=...): every laptop's own
// lock spends from wallets on the room's servers, in two rounds the
// facilitator starts from the terminal.
//
//   - Round 1, side by side: each lock guards a wallet of its own, under
//     a lock key of its own. On the room's order (a moment it draws for
//     each laptop), each laptop stops (SIGSTOP) one of its own spender
//     processes right after it read the balance, for three times the
//     lease's TTL, as step 5 does: a lock with no fence loses a spend.
//   - Round 2, one key: every lock guards the shared wallet under the
//     shared lock key. One lock that breaks the protocol breaks it for
//     everyone, and the proxy in front of the room's Redis says whose
//     command did what (leases.go).
//
// The house's locks run beside the room's, from this program: the
// article's lock with plain writes, a mutant of it, and the article's
// lock with fenced writes.

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/wire"
	"example.com/walletlock/wallet"
)

// What every lock spends with, in both rounds.
const (
	spenders = 3                      // spender processes per laptop
	initial  = 1_000_000              // a wallet's balance at a round's start
	amount   = 10                     // one spend
	leaseTTL = 500 * time.Millisecond // every lease's TTL
	stopFor  = 3 * leaseTTL           // how long the stopped spender stays stopped
	work     = 5 * time.Millisecond   // a spend's work, between its read and its write
	lead     = 3 * time.Second        // between a round's order and its start, for the plans to arrive
	grace    = 15 * time.Second       // after a round's end, for the reports to arrive
)

// Plan is a round as one laptop runs it.
type Plan struct {
	Round   int     `json:"round"` // 1 or 2; 0: the race is over
	Key     string  `json:"key"`   // the lock key
	Wallet  int64   `json:"wallet"`
	StartIn float64 `json:"start_in_s"` // seconds from the plan's arrival to the round's start
	Seconds float64 `json:"seconds"`    // the round's length
	StopAt  float64 `json:"stop_at_s"`  // seconds into the round: stop the next spender that reads the balance
	Fence   bool    `json:"fence"`      // the house's: spend with fenced writes (a laptop's: when its lock has a fence)
	Plain   bool    `json:"plain"`      // the house's: spend with plain writes, fence or none
}

// Result is what a laptop reports of a round.
type Result struct {
	Round    int      `json:"round"`
	Lock     string   `json:"lock"`   // what LOCK= named
	Fenced   bool     `json:"fenced"` // its writes were fenced
	Accepted int      `json:"accepted"`
	Refused  int      `json:"refused"` // writes PostgreSQL refused as stale
	Unknown  int      `json:"unknown"`
	NoLease  int      `json:"no_lease"` // acquires that gave up
	Errors   []string `json:"errors,omitempty"`
	Stopped  string   `json:"stopped,omitempty"` // "spender 2 at 12.3 s for 1.5 s"
	StopAt   float64  `json:"stop_at_s"`         // when it stopped, in seconds into the round; 0: none
	Verdict  string   `json:"verdict,omitempty"` // its first lost spend, in a sentence
}

// House is a lock the room runs itself, beside the laptops'.
type House struct {
	Name  string // its row: "house-lock"
	Lock  string // what it runs, as LOCK= names it
	Fence bool   // fenced writes; else plain
	What  string // in words, for the page
}

// HouseLocks are the house's rows in the race: the article's lock with
// plain writes, a mutant of it, and the article's lock with fenced
// writes.
var HouseLocks = []House{
	{Name: "house-lock", Lock: "lock", What: "the article's lock"},
	{Name: "house-mutant", Lock: "mutant:del-no-token", What: "the article's lock, its Release deleting the key without checking the token"},
	{Name: "house-fenced", Lock: "lock", Fence: true, What: "the article's lock, fenced writes"},
}

// laptop is one participant of the race.
type laptop struct {
	Creds
	from    string // the address it joined from
	house   *House
	plans   [3]Plan
	results [3]*Result
}

type race struct {
	s     *servers
	round time.Duration
	house []House

	mu      sync.Mutex
	laptops []*laptop
	now     int           // the round running or last run; 0 before the first
	started time.Time     // when round now started
	begun   chan struct{} // closed when the next round's plans are out
	over    bool          // both rounds ran
	log     []wire.Command
	rounds  []charts.Round // those judged, for the page
}

// StartRace starts the race's servers behind proxies on the room's host
// (the page's port + 1 and + 2, or any when the page's is any) and takes
// joins from then on. round is each round's length; house are the
// house's locks, which join as the laptops do.
func (r *Room) StartRace(ctx context.Context, round time.Duration, house []House) error {
	host, port, _ := net.SplitHostPort(r.ln.Addr().String())
	rp, pp := 0, 0
	if _, asked, _ := net.SplitHostPort(r.asked); asked != "0" {
		fmt.Sscan(port, &rp)
		rp, pp = rp+1, rp+2
	}
	s, err := startServers(ctx, host, rp, pp)
	if err != nil {
		return fmt.Errorf("the race's servers: %w", err)
	}
	r.race = &race{s: s, round: round, house: house, begun: make(chan struct{})}
	s.rproxy.OnCommand(r.race.saw)
	r.Listen = append(r.Listen, s.rproxy.Addr()+" (the race's Redis, through the room's proxy)",
		s.pproxy.Addr()+" (the race's PostgreSQL, through a proxy); the servers themselves listen on 127.0.0.1")
	r.mux.HandleFunc("POST /join", r.join)
	r.mux.HandleFunc("GET /plan", r.plan)
	r.mux.HandleFunc("POST /result", r.result)
	return nil
}

// saw keeps round 2's commands on the shared keys, as the proxy passes
// them on.
func (rc *race) saw(c wire.Command) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.now == 2 && slices.ContainsFunc(c.Args, func(a string) bool { return strings.HasPrefix(a, sharedPrefix) }) && len(rc.log) < 1_000_000 {
		rc.log = append(rc.log, c)
	}
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,23}$`)

// join makes a laptop's users, or gives them again to the laptop that
// made them, from the same address.
func (r *Room) join(w http.ResponseWriter, req *http.Request) {
	const what = "a join"
	if !r.codeOK(req) {
		r.refuse(w, req, http.StatusForbidden, what, "no join code, or not the room's: copy the join line the facilitator's terminal printed (ROOM=...)")
		return
	}
	var ask struct{ Name string }
	json.NewDecoder(http.MaxBytesReader(w, req.Body, 4<<10)).Decode(&ask)
	from, _, _ := net.SplitHostPort(req.RemoteAddr)
	house := r.houseOf(ask.Name, from)
	if !nameRE.MatchString(ask.Name) || strings.HasPrefix(ask.Name, "house") && house == nil {
		r.refuse(w, req, http.StatusBadRequest, what, fmt.Sprintf("the name %s is not one the room takes: lower-case letters, digits and dashes, at most 24, and not house-...: run again with LABEL=ana, say", harness.Printable(strings.TrimSpace(ask.Name))))
		return
	}
	rc := r.race
	rc.mu.Lock()
	i := slices.IndexFunc(rc.laptops, func(l *laptop) bool { return l.Name == ask.Name })
	taken := i >= 0 && rc.laptops[i].from != from
	var err error
	if i < 0 {
		var c Creds
		if c, err = rc.s.addUser(req.Context(), ask.Name, int64(100+len(rc.laptops))); err == nil {
			rc.laptops = append(rc.laptops, &laptop{Creds: c, from: from, house: house})
			i = len(rc.laptops) - 1
		}
	}
	var c Creds
	if err == nil && !taken {
		c = rc.laptops[i].Creds
	}
	rc.mu.Unlock()
	switch {
	case taken:
		r.refuse(w, req, http.StatusConflict, what, "the name "+ask.Name+" is another laptop's: run again with LABEL=another-name")
	case err != nil:
		http.Error(w, "workshop room: "+harness.Printable(err.Error()), http.StatusInternalServerError)
	default:
		json.NewEncoder(w).Encode(c)
	}
}

// houseOf is the house's lock named name, when it joins from the room
// itself.
func (r *Room) houseOf(name, from string) *House {
	host, _, _ := net.SplitHostPort(r.ln.Addr().String())
	for i, h := range r.race.house {
		if h.Name == name && from == host {
			return &r.race.house[i]
		}
	}
	return nil
}

// laptopOf is the laptop a request comes from, by its name and password.
func (rc *race) laptopOf(req *http.Request) *laptop {
	name, pass := req.Header.Get("Room-Name"), []byte(req.Header.Get("Room-Password"))
	i := slices.IndexFunc(rc.laptops, func(l *laptop) bool {
		return l.Name == name && subtle.ConstantTimeCompare([]byte(l.Password), pass) == 1
	})
	if i < 0 {
		return nil
	}
	return rc.laptops[i]
}

// plan answers a laptop's wait for the round after ?after=N: its plan
// once the round is ordered, Round 0 once the race is over, or 204 after
// 25 s, when the laptop asks again.
func (r *Room) plan(w http.ResponseWriter, req *http.Request) {
	rc := r.race
	var after int
	fmt.Sscan(req.URL.Query().Get("after"), &after)
	timeout := time.After(25 * time.Second)
	for {
		rc.mu.Lock()
		l, now, over, begun := rc.laptopOf(req), rc.now, rc.over, rc.begun
		var p Plan
		if l != nil && now > after && now <= 2 {
			p = l.plans[now]
			p.StartIn = time.Until(rc.started).Seconds()
		}
		rc.mu.Unlock()
		switch {
		case l == nil || !r.codeOK(req):
			r.refuse(w, req, http.StatusForbidden, "a wait for the race", "not a laptop that joined, or not its password: run make race ROOM=... again")
			return
		case now > after && p.Round > 0 && p.StartIn > -1: // a laptop that comes late misses the round
			json.NewEncoder(w).Encode(p)
			return
		case over:
			json.NewEncoder(w).Encode(Plan{})
			return
		}
		select {
		case <-begun:
		case <-timeout:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-r.closed:
			w.WriteHeader(http.StatusNoContent)
			return
		case <-req.Context().Done():
			return
		}
	}
}

// result takes a laptop's report of a round.
func (r *Room) result(w http.ResponseWriter, req *http.Request) {
	rc := r.race
	var res Result
	err := json.NewDecoder(http.MaxBytesReader(w, req.Body, 64<<10)).Decode(&res)
	rc.mu.Lock()
	l := rc.laptopOf(req)
	ok := l != nil && err == nil && res.Round >= 1 && res.Round <= 2 && r.codeOK(req)
	if ok {
		l.results[res.Round] = &res
	}
	rc.mu.Unlock()
	switch {
	case l == nil || !r.codeOK(req):
		r.refuse(w, req, http.StatusForbidden, "a race report", "not a laptop that joined, or not its password")
	case !ok:
		http.Error(w, "workshop room: not a race report", http.StatusBadRequest)
	}
}

// RunRound orders round n (1 or 2) to every laptop that joined, waits for
// it to end and for their reports (at most grace after its end, or ctx),
// then judges it. It returns the round as the page shows it.
func (r *Room) RunRound(ctx context.Context, n int) (charts.Round, error) {
	rc := r.race
	rc.mu.Lock()
	if n != rc.now+1 || n > 2 {
		rc.mu.Unlock()
		return charts.Round{}, fmt.Errorf("round %d cannot start after round %d", n, rc.now)
	}
	laptops := slices.Clone(rc.laptops)
	rc.mu.Unlock()
	if len(laptops) == 0 {
		return charts.Round{}, errors.New("no laptop has joined the race yet")
	}
	// The wallets first: a plan never arrives before its wallet is full.
	for _, l := range laptops {
		id, owner := l.Wallet, ownerOf(l.User)
		if n == 2 {
			id, owner = sharedWallet, sharedOwner
		}
		if _, err := rc.s.pool.Exec(ctx, `INSERT INTO walletlock_wallets (id, balance, owner) VALUES ($1, $2, $3)
			ON CONFLICT (id) DO UPDATE SET balance = $2, fence = 0, version = 0`, id, initial, owner); err != nil {
			return charts.Round{}, fmt.Errorf("fill the wallets: %w", err)
		}
	}
	for _, k := range []string{sharedPrefix + "lock:{wallet}", sharedPrefix + "lock:{wallet}:fence"} {
		rc.s.admin.Del(ctx, k)
	}
	rc.mu.Lock()
	for _, l := range laptops {
		p := Plan{Round: n, Key: l.Prefix + "lock:{wallet}", Wallet: l.Wallet, Seconds: rc.round.Seconds(),
			StopAt: (0.2 + 0.4*rand.Float64()) * rc.round.Seconds()}
		if n == 2 {
			p.Key, p.Wallet = sharedPrefix+"lock:{wallet}", sharedWallet
		}
		if l.house != nil {
			p.Fence, p.Plain = l.house.Fence, !l.house.Fence
		}
		l.plans[n] = p
	}
	rc.now, rc.started, rc.log = n, time.Now().Add(lead), nil
	rc.s.rproxy.Arm(wire.None, 0) // the proxy's own log starts again: it keeps one round's
	close(rc.begun)
	rc.begun = make(chan struct{})
	rc.mu.Unlock()

	deadline := time.Now().Add(lead + rc.round + grace)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		rc.mu.Lock()
		all := !slices.ContainsFunc(laptops, func(l *laptop) bool { return l.results[n] == nil })
		rc.mu.Unlock()
		if all && time.Now().After(rc.started.Add(rc.round)) {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return rc.judge(ctx, n, laptops)
}

// ownerOf is the owner of a laptop's wallet row: its PostgreSQL role.
func ownerOf(user string) string { return strings.ReplaceAll(user, "-", "_") }

// judge reads the round's wallets and reports into the page's rows.
func (rc *race) judge(ctx context.Context, n int, laptops []*laptop) (charts.Round, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	total := wallet.Tally{}
	var rows []charts.RaceRow
	var seen *leases
	if n == 2 {
		seen = readLeases(rc.log, rc.started, rc.stops(laptops, n))
	}
	for _, l := range laptops {
		row := charts.RaceRow{Lock: l.Name, House: l.house != nil}
		res := l.results[n]
		if l.house != nil {
			row.Lock = l.Name + ": " + l.house.What
		}
		if res == nil {
			row.Verdict, row.Lost = "no report: the laptop did not run the round, or its report did not arrive", n == 1
			rows = append(rows, row)
			continue
		}
		if l.house == nil && res.Lock != "" {
			row.Lock += " (" + harness.Printable(res.Lock) + ")"
		}
		row.Spends, row.Accepted, row.Stops = "plain writes", int64(res.Accepted), harness.Printable(res.Stopped)
		if res.Fenced {
			row.Spends = fmt.Sprintf("fenced writes; PostgreSQL refused %d stale", res.Refused)
		}
		t := wallet.Tally{Accepted: res.Accepted, Unknown: res.Unknown}
		total.Accepted += res.Accepted
		total.Unknown += res.Unknown
		if n == 1 {
			balance, err := rc.s.store.Balance(ctx, l.Wallet)
			if err != nil {
				return charts.Round{}, fmt.Errorf("read %s's wallet: %w", l.Name, err)
			}
			v := wallet.Check(initial, amount, t, balance)
			row.Check, row.Lost = v.String(), !v.OK
			if !v.OK {
				row.Verdict = cutTo(harness.Printable(res.Verdict), 400)
			}
		} else {
			row.Verdict = seen.of(l.User)
		}
		if len(res.Errors) > 0 && row.Verdict == "" {
			row.Verdict = fmt.Sprintf("%d errors, the first: %s", len(res.Errors), cutTo(harness.Printable(res.Errors[0]), 200))
		}
		rows = append(rows, row)
	}
	round := charts.Round{Rows: rows}
	round.Title, round.Note = roundText(n)
	if n == 2 {
		balance, err := rc.s.store.Balance(ctx, sharedWallet)
		if err != nil {
			return charts.Round{}, fmt.Errorf("read the shared wallet: %w", err)
		}
		v := wallet.Check(initial, amount, total, balance)
		round.Check, round.Lost, round.Story = v.String(), !v.OK, seen.story
	}
	rc.rounds = append(rc.rounds, round)
	if n == 2 {
		rc.over = true
		close(rc.begun) // the laptops waiting for a third round go home
		rc.begun = make(chan struct{})
	}
	return round, nil
}

// roundText is round n's title, and how to read it.
func roundText(n int) (title, note string) {
	if n == 1 {
		return "Round 1: side by side, each lock on a wallet of its own",
			fmt.Sprintf("Every lock ran %d spender processes on a wallet of its own, each spend a read, %v of work and a write, under a lease of %v. At a moment the room drew for each laptop, it stopped (SIGSTOP) the next of its spenders to read the balance, for %v, as step 5 does: past its lease. A red row lost money: its wallet's balance is not what its accepted spends leave, and the last column says how. A grey row is the house's. Fenced writes carry the lease's fence to PostgreSQL, which refuses a stale one; plain writes carry nothing.", spenders, work, leaseTTL, stopFor)
	}
	return "Round 2: one wallet, one lock key",
		"Every lock, the house's too, guarded the one shared wallet under the one shared lock key, with the same stops as in round 1. A lock is a protocol: one client that breaks it breaks it for everyone. Below the table, read from the room's proxy, whose command did what to whose lease; a lock's row says what its own commands did. The proxy reads a SET NX that answered OK as a lease taken, a DEL as a lease deleted, a script given a lease's token as that lease's own release or refresh, and a lease as run out at its PX."
}

// stops are the laptops' stops of round n, by user: when each began, in
// the room's time.
func (rc *race) stops(laptops []*laptop, n int) map[string]time.Time {
	out := map[string]time.Time{}
	for _, l := range laptops {
		if res := l.results[n]; res != nil && res.StopAt > 0 {
			out[l.User] = rc.started.Add(time.Duration(res.StopAt * float64(time.Second)))
		}
	}
	return out
}

// view is the race for the page.
func (rc *race) view() *charts.Race {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	v := &charts.Race{}
	for _, l := range rc.laptops {
		if l.house == nil {
			v.Joined = append(v.Joined, l.Name)
		}
	}
	switch {
	case rc.over:
		v.State = "The race is over."
	case rc.now > 0 && time.Now().Before(rc.started.Add(rc.round)):
		v.State = fmt.Sprintf("Round %d is running, until %s.", rc.now, rc.started.Add(rc.round).Format("15:04:05"))
	default:
		v.State = fmt.Sprintf("Waiting for the facilitator to start round %d (Enter, in the room's terminal). A laptop joins with make race ROOM=<the join line>.", rc.now+1)
	}
	v.Rounds = slices.Clone(rc.rounds)
	return v
}

// cutTo is s, at most n bytes of it, cut at a character.
func cutTo(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xc0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}
