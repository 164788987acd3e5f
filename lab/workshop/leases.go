package workshop

// Round 2 read from the wire: the commands the room's proxy saw on the
// shared lock key, each with the ACL user and the connection that sent
// it, in the order their replies came, tell who held the lease when, and
// whose command touched whose. A lease is its holder's connection (one
// spender process) and its token. The reading rules, which the page
// states:
//
//   - a SET ... NX that answered OK took the lease with its token, and a
//     script (EVAL, EVALSHA, FCALL) given a token never seen before that
//     answered neither 0 nor nil took it too (AcquireFenced);
//   - a script given a lease's token acted on that lease: one argument,
//     a release that deleted the key; more, a refresh that set its TTL;
//   - a DEL, UNLINK or GETDEL that deleted the key deleted whichever
//     lease it held, and a PEXPIRE that answered 1 set its TTL;
//   - a lease ran out at its PX, counted from its reply.
//
// Replies of two connections can reach the proxy in another order than
// Redis ran their commands, by a few microseconds: a holder's own
// release that comes just after the next holder took the lock (within
// reorder) ran before it.
//
// The sentences say what broke: a command that deleted or changed
// another connection's lease, and a lease that ran out or was deleted
// while its holder, who had not yet sent another command on the key,
// still held it, when someone else then took the lock.

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/lab/internal/wire"
)

// reorder is how much later than the next holder's take a holder's own
// release may reach the proxy and still be taken to have run before it.
const reorder = 20 * time.Millisecond

// lease is one holding of the key, as the wire shows it.
type lease struct {
	user    string
	conn    int
	token   string
	expires int64 // Unix ns
	ended   int64 // when the next take found it still there, by the model; 0 while it lasts
	in      *incident
}

// incident is a lease that ended before its holder let it go: deleted or
// changed by another's command, or run out; then who took the lock next,
// and when its holder next sent a command on the key.
type incident struct {
	victim   lease
	cause    string // "ana's Release (DEL, no token check) deleted bob's lease at 12.3 s"
	bad      bool   // another's command did it: an incident whatever comes next
	actor    string // the user whose row tells it
	next     string // who took the lock next, while the victim held it
	nextAt   int64
	victimAt int64 // the victim's next command on the key
	dropped  bool  // it was a release that reached the proxy late
}

// leases is round 2 as the wire told it.
type leases struct {
	story []string
	by    map[string][]string // user -> what its commands did, or what happened to its lease
}

// readLeases reads the proxy's log of round 2, which started at start;
// stops are when each user's stopped spender stopped.
func readLeases(log []wire.Command, start time.Time, stops map[string]time.Time) *leases {
	log = slices.Clone(log)
	slices.SortStableFunc(log, func(a, b wire.Command) int { return cmp.Compare(a.Replied, b.Replied) })
	key := sharedPrefix + "lock:{wallet}"
	at := func(ns int64) string { return fmt.Sprintf("%.1f s", time.Duration(ns-start.UnixNano()).Seconds()) }
	var (
		cur       *lease
		incidents []*incident
		open      = map[int]*incident{} // by the victim's connection: it has not acted since
		byToken   = map[string]*lease{}
		last      = map[int]string{} // each connection's last command on the key
	)
	end := func(l *lease, cause, actor string, bad bool) {
		l.in = &incident{victim: *l, cause: cause, actor: actor, bad: bad}
		incidents = append(incidents, l.in)
		open[l.conn] = l.in
	}
	for _, c := range log {
		keys, argv := keysOf(c)
		if c.Replied == 0 || !slices.Contains(keys, key) || strings.HasPrefix(c.Reply, "(error)") {
			continue
		}
		t := c.Replied
		if cur != nil && t > cur.expires {
			cause := fmt.Sprintf("%s's lease ran out at %s", who(cur.user), at(cur.expires))
			if s, ok := stops[cur.user]; ok && s.UnixNano() < cur.expires && cur.expires-s.UnixNano() < int64(stopFor) {
				cause += ", while " + who(cur.user) + " was stopped"
			}
			end(cur, cause, cur.user, false)
			cur = nil
		}
		if in := open[c.Conn]; in != nil { // the victim acts again: it knows, or learns, its lease is gone
			in.victimAt = t
			delete(open, c.Conn)
		}
		did := c.Reply != "(nil)" && c.Reply != "(integer) 0"
		op, acted := opOf(c, last[c.Conn])
		last[c.Conn] = c.Name
		token := first(argv)
		mine := byToken[token] // the lease a script's token names
		if op == "script" {
			switch {
			case mine == nil:
				op, acted = "AcquireFenced ("+c.Name+")", "take"
			case len(argv) == 1:
				op, acted = "Release ("+c.Name+" of a script that does not check the token)", "delete"
			default:
				op, acted = "Refresh ("+c.Name+" of a script that does not check the token)", "extend"
			}
		} else if acted == "delete" || acted == "extend" {
			// A DEL names no token: its connection's lease, the live one,
			// or one that ended just before, by the order of the replies.
			mine = nil
			if cur != nil && cur.conn == c.Conn {
				mine = cur
			}
			for _, l := range byToken { // the one that ended last
				if cur != mine && l.conn == c.Conn && l.ended > 0 && t-l.ended < int64(reorder) && (mine == nil || l.ended > mine.ended) {
					mine = l
				}
			}
		}
		if !did || acted == "" {
			continue
		}
		if mine != nil && mine != cur && mine.ended > 0 && t-mine.ended < int64(reorder) && mine.conn == c.Conn {
			if mine.in != nil && !mine.in.bad { // its own release, late: it ran before the next take
				mine.in.dropped = true
			}
			continue
		}
		other := cur != nil && cur.conn != c.Conn && (mine == nil || mine != cur)
		switch {
		case acted == "take":
			if cur != nil && other && op == "Acquire (SET without NX)" {
				end(cur, fmt.Sprintf("%s's %s overwrote %s's lease at %s", who(c.User), op, whose(cur.user, c.User), at(t)), c.User, true)
			} else if cur != nil { // the key was free: its holder's release is late, or its lease ran out early
				cur.ended = t
				end(cur, fmt.Sprintf("%s's lease ran out at %s", who(cur.user), at(t)), cur.user, false)
			}
			for _, in := range open {
				if in.next == "" && in.victim.conn != c.Conn {
					in.next, in.nextAt = whose(c.User, in.victim.user), t
				}
			}
			cur = &lease{user: c.User, conn: c.Conn, token: token, expires: t + int64(ttlOf(c, argv))}
			byToken[token] = cur
		case cur == nil:
		case other && acted == "delete":
			cur.ended = t
			end(cur, fmt.Sprintf("%s's %s deleted %s's lease at %s", who(c.User), op, whose(cur.user, c.User), at(t)), c.User, true)
			cur = nil
		case other && acted == "extend":
			incidents = append(incidents, &incident{victim: *cur, bad: true, actor: c.User,
				cause: fmt.Sprintf("%s's %s set the TTL of %s's lease at %s", who(c.User), op, whose(cur.user, c.User), at(t))})
			cur.expires = t + int64(ttlOf(c, argv))
		case acted == "delete":
			cur.ended, cur = t, nil
		case acted == "extend":
			cur.expires = t + int64(ttlOf(c, argv))
		}
	}
	out := &leases{by: map[string][]string{}}
	told := 0
	for _, in := range incidents {
		if in.dropped || !in.bad && in.next == "" {
			continue // a late release, or a lease that ran out before anyone else took the lock
		}
		s := in.cause
		if in.next != "" {
			s += fmt.Sprintf("; %s then got the lock at %s while %s held it", in.next, at(in.nextAt), who(in.victim.user))
			if in.victimAt > in.nextAt {
				s += fmt.Sprintf(" (its next command on the key came at %s)", at(in.victimAt))
			}
		}
		if told++; told <= 8 {
			out.story = append(out.story, s)
		}
		out.by[in.actor] = append(out.by[in.actor], s)
	}
	if told > 8 {
		out.story = append(out.story, fmt.Sprintf("and %d more like these", told-8))
	}
	return out
}

// of is what user's commands did in round 2, or what happened to its
// lease, in a sentence or two; "" when nothing.
func (ls *leases) of(user string) string {
	switch s := ls.by[user]; len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	case 2:
		return s[0] + " (and once more)"
	default:
		return fmt.Sprintf("%s (and %d more times)", s[0], len(s)-1)
	}
}

// keysOf are a command's keys and, for a script, its other arguments.
func keysOf(c wire.Command) (keys, argv []string) {
	switch c.Name {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		if len(c.Args) < 2 {
			return nil, nil
		}
		n, _ := strconv.Atoi(c.Args[1])
		n = min(max(n, 0), len(c.Args)-2)
		return c.Args[2 : 2+n], c.Args[2+n:]
	case "DEL", "UNLINK":
		return c.Args, nil
	}
	if len(c.Args) == 0 {
		return nil, nil
	}
	return c.Args[:1], c.Args[1:]
}

// opOf names what a command did to the lease, as the sentences say it,
// and what it does: "take", "delete", "extend", or "" (a read); a script
// is "script", which its token tells. prev is the connection's command
// before it on the key.
func opOf(c wire.Command, prev string) (op, acted string) {
	two := func() string {
		if prev == "GET" {
			return "(GET, then " + c.Name + ": two commands)"
		}
		return "(" + c.Name + ", no token check)"
	}
	switch c.Name {
	case "SET":
		if slices.ContainsFunc(c.Args, func(a string) bool { return strings.EqualFold(a, "NX") }) {
			return "Acquire (SET NX)", "take"
		}
		return "Acquire (SET without NX)", "take"
	case "DEL", "UNLINK", "GETDEL":
		return "Release " + two(), "delete"
	case "PEXPIRE", "EXPIRE", "PEXPIREAT", "EXPIREAT":
		return "Refresh " + two(), "extend"
	case "EVAL", "EVALSHA", "FCALL":
		return "script", "script"
	}
	return c.Name, ""
}

// ttlOf is the TTL a command gives the lease: its PX or EX, a script's
// number of milliseconds, or the race's.
func ttlOf(c wire.Command, argv []string) time.Duration {
	for i, a := range argv {
		n, err := strconv.ParseInt(a, 10, 64)
		switch {
		case err != nil:
		case i > 0 && strings.EqualFold(argv[i-1], "PX") || c.Name == "PEXPIRE" || c.Name != "SET" && n >= 10:
			return time.Duration(n) * time.Millisecond
		case i > 0 && strings.EqualFold(argv[i-1], "EX") || c.Name == "EXPIRE":
			return time.Duration(n) * time.Second
		}
	}
	return leaseTTL
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// who names a user's laptop: room-ana is ana.
func who(user string) string { return strings.TrimPrefix(user, "room-") }

// whose names user as another user sees it: another laptop, or another
// spender of the same one.
func whose(user, other string) string {
	if user == other {
		return "another spender of " + who(user)
	}
	return who(user)
}
