package wire

import "strings"

// Command is one command a client sent through the proxy, as the log
// keeps it.
type Command struct {
	Seq      int      // 1-based, since the last Arm, in the order the proxy received commands on all its connections
	Conn     int      // the client connection, 1-based in the order the proxy accepted them
	User     string   // the ACL user the connection was authenticated as when it ran: "default" until AUTH or HELLO ... AUTH succeeds
	Name     string   // in upper case: "SET"
	Args     []string // the arguments after the name; a password among them (ACL SETUSER, CONFIG SET, MIGRATE) is "…"
	Received int64    // Unix ns: read from the client
	Sent     int64    // Unix ns: forwarded to Redis; 0 while it is held
	Replied  int64    // Unix ns: its reply came back from Redis; 0 until then
	Reply    string   // the reply in short: OK, (nil), (integer) 3, "a value", (error) NOSCRIPT No matching script, [2 items]
}

// String is the command as a sentence names it: "SET lock:1 … PX 500 NX"
// (its name, its key, and its short arguments; a token or a value is
// left out), "EVALSHA on lock:1" (a script or function: its first key).
func (c Command) String() string {
	switch c.Name {
	case "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO":
		if len(c.Args) > 2 && c.Args[1] != "0" {
			return c.Name + " on " + c.Args[2]
		}
		return c.Name
	}
	parts := []string{c.Name}
	for i, a := range c.Args {
		switch {
		case i > 0 && len(a) > 5:
			a = "…"
		case i > 0:
			a = strings.ToUpper(a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// housekeeping are the commands a client library sends to set up and
// keep its connection, not the lock's: they are forwarded, and neither
// counted nor logged. CLUSTER is how a client learns the topology
// (rueidis sends CLUSTER SLOTS as it connects, go-redis's cluster client
// too); a lock never sends it.
var housekeeping = map[string]bool{
	"HELLO": true, "AUTH": true, "CLIENT": true, "SELECT": true, "PING": true, "READONLY": true,
	"READWRITE": true, "COMMAND": true, "QUIT": true, "RESET": true, "ECHO": true, "CLUSTER": true,
}

// passthrough are the commands after which a connection carries messages
// rather than replies: from then on the proxy copies it untouched (so
// does CLIENT REPLY OFF|SKIP; see count).
var passthrough = map[string]bool{"SUBSCRIBE": true, "PSUBSCRIBE": true, "SSUBSCRIBE": true, "MONITOR": true}

// authUser returns the user that AUTH or HELLO ... AUTH authenticates
// as, or RESET returns to; "" for any other command. The password is not
// returned, nor kept.
func authUser(name string, args []string) string {
	switch {
	case name == "RESET", name == "AUTH" && len(args) == 1:
		return "default"
	case name == "AUTH" && len(args) == 2:
		return args[0]
	case name == "HELLO":
		for i := 1; i+2 < len(args); i++ {
			if strings.EqualFold(args[i], "AUTH") {
				return args[i+1]
			}
		}
	}
	return ""
}

// redact replaces the passwords among a counted command's arguments with
// "…", in place.
func redact(name string, args []string) {
	sub := func(i int) string {
		if i < len(args) {
			return strings.ToUpper(args[i])
		}
		return ""
	}
	switch {
	case name == "ACL" && sub(0) == "SETUSER":
		for i := 2; i < len(args); i++ {
			if strings.ContainsAny(args[i][:min(len(args[i]), 1)], "><#!") {
				args[i] = "…"
			}
		}
	case name == "CONFIG" && sub(0) == "SET":
		for i := 1; i+1 < len(args); i += 2 {
			if strings.Contains(strings.ToLower(args[i]), "pass") || strings.EqualFold(args[i], "masterauth") {
				args[i+1] = "…"
			}
		}
	case name == "MIGRATE":
		for i := range args {
			if j := map[string]int{"AUTH": i + 1, "AUTH2": i + 2}[sub(i)]; j > i && j < len(args) {
				args[j] = "…"
			}
		}
	}
}
