package workshop

import (
	"strings"
	"testing"
	"time"

	"example.com/walletlock/lab/internal/wire"
)

// wireLog makes a proxy's log from lines "ms conn user NAME args... -> reply",
// each command replied at ms after start.
func wireLog(start time.Time, lines ...string) []wire.Command {
	var log []wire.Command
	for i, l := range lines {
		cmd, reply, _ := strings.Cut(l, " -> ")
		f := strings.Fields(cmd)
		ms, _ := time.ParseDuration(f[0] + "ms")
		conn := map[string]int{"a1": 1, "a2": 2, "b1": 3, "c1": 4}[f[1]]
		user := "room-" + map[byte]string{'a': "ana", 'b': "bob", 'c': "cy"}[f[1][0]]
		at := start.Add(ms).UnixNano()
		log = append(log, wire.Command{Seq: i + 1, Conn: conn, User: user, Name: f[2], Args: f[3:], Received: at - 100_000, Replied: at, Reply: reply})
	}
	return log
}

const key = "room:shared:lock:{wallet}"

func TestReadLeases(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	for _, c := range []struct {
		name  string
		stops map[string]time.Duration
		log   []string
		want  []string // the story, each line's start
		rows  map[string]string
	}{
		{name: "a release whose reply comes after the next holder's take is no incident",
			log: []string{
				"10 a1 SET " + key + " TA px 500 nx -> OK",
				"20 b1 EVALSHA sha 2 " + key + " fence TB 500 -> (integer) 1", // replied first,
				"20.05 a1 EVALSHA sha 1 " + key + " TA -> (integer) 1",        // but ran after this
				"30 b1 EVALSHA sha 1 " + key + " TB -> (integer) 1",
			}},
		{name: "a stopped holder's lease runs out, and another takes the lock while it still holds it",
			stops: map[string]time.Duration{"room-ana": 100 * time.Millisecond},
			log: []string{
				"50 a1 SET " + key + " TA px 500 nx -> OK",
				"700 b1 SET " + key + " TB px 500 nx -> OK",
				"1650 a1 EVALSHA sha 1 " + key + " TA -> (integer) 0",
			},
			want: []string{"ana's lease ran out at 0.6 s, while ana was stopped; bob then got the lock at 0.7 s while ana held it (its next command on the key came at 1.6 s)"},
			rows: map[string]string{"room-ana": "ana's lease ran out", "room-bob": ""}},
		{name: "a stale release that checks no token deletes the next holder's lease",
			log: []string{
				"50 a1 SET " + key + " TA px 500 nx -> OK",
				"700 b1 SET " + key + " TB px 500 nx -> OK",
				"900 a1 EVALSHA sha 1 " + key + " TA -> (integer) 1",
				"910 c1 SET " + key + " TC px 500 nx -> OK",
				"950 b1 EVALSHA sha 1 " + key + " TB -> (integer) 0",
			},
			want: []string{"ana's lease ran out at 0.6 s; bob then got the lock at 0.7 s while ana held it (its next command on the key came at 0.9 s)",
				"ana's Release (EVALSHA of a script that does not check the token) deleted bob's lease at 0.9 s; cy then got the lock at 0.9 s while bob held it (its next command on the key came at 0.9 s)"},
			rows: map[string]string{"room-ana": "ana's lease ran out at 0.6 s; bob then got the lock at 0.7 s while ana held it (its next command on the key came at 0.9 s) (and once more)", "room-bob": "", "room-cy": ""}},
		{name: "a DEL deletes whoever holds the lease; a GET before it is named",
			log: []string{
				"50 a1 SET " + key + " TA px 500 nx -> OK",
				"100 b1 GET " + key + " -> \"TA\"",
				"110 b1 DEL " + key + " -> (integer) 1",
				"120 a2 SET " + key + " TA2 px 500 nx -> OK",
				"160 a1 DEL " + key + " -> (integer) 1",
			},
			want: []string{"bob's Release (GET, then DEL: two commands) deleted ana's lease at 0.1 s; another spender of ana then got the lock at 0.1 s while ana held it (its next command on the key came at 0.2 s)",
				"ana's Release (DEL, no token check) deleted another spender of ana's lease at 0.2 s"}},
		{name: "a lease that runs out before anyone else takes the lock is no incident",
			log: []string{
				"50 a1 SET " + key + " TA px 500 nx -> OK",
				"900 a1 EVALSHA sha 1 " + key + " TA -> (integer) 0",
				"910 b1 SET " + key + " TB px 500 nx -> OK",
			}},
		{name: "a refresh that checks no token sets the TTL of another's lease",
			log: []string{
				"50 a1 SET " + key + " TA px 500 nx -> OK",
				"600 b1 SET " + key + " TB px 500 nx -> OK",
				"650 a1 GET " + key + " -> \"TB\"",
				"660 a1 PEXPIRE " + key + " 500 -> (integer) 1",
			},
			want: []string{"ana's lease ran out at 0.6 s; bob then got the lock at 0.6 s while ana held it (its next command on the key came at 0.7 s)",
				"ana's Refresh (GET, then PEXPIRE: two commands) set the TTL of bob's lease at 0.7 s"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			stops := map[string]time.Time{}
			for u, d := range c.stops {
				stops[u] = start.Add(d)
			}
			ls := readLeases(wireLog(start, c.log...), start, stops)
			if len(ls.story) != len(c.want) {
				t.Fatalf("story:\n%s\nwant %d lines", strings.Join(ls.story, "\n"), len(c.want))
			}
			for i, w := range c.want {
				if !strings.HasPrefix(ls.story[i], w) {
					t.Errorf("line %d:\n%s\nwant it to start\n%s", i, ls.story[i], w)
				}
			}
			for user, w := range c.rows {
				if got := ls.of(user); !strings.HasPrefix(got, w) || w == "" && got != "" {
					t.Errorf("%s's row says %q, want %q", user, got, w)
				}
			}
		})
	}
}
