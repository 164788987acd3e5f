package charts

// Live is what the live room (make room) adds to the room's page: where
// the room listens, when the page was drawn, what it refused, and the
// race. The page loads itself again every Refresh seconds with a
// <meta http-equiv="refresh">: a short poll that needs no script.
type Live struct {
	Refresh int      // seconds between two loads of the page
	Listen  []string // every address the room listens on, each with what for
	Updated string   // when the page was drawn
	Notes   []string // the latest documents refused and files skipped, each in a sentence
	Race    *Race    // nil: no race in this room
}

// Race is the race of the room's locks (make room RACE=1), as far as it
// has run.
type Race struct {
	State  string // what it waits for, in a sentence
	Joined []string
	Rounds []Round
}

// Round is one round of the race: a row per lock.
type Round struct {
	Title string
	Note  string // how to read it
	Rows  []RaceRow
	Check string // round 2: the one wallet's check line
	Lost  bool   // round 2: the wallet lost money
	Story []string
}

// RaceRow is one lock in one round.
type RaceRow struct {
	Lock     string
	House    bool   // one of the house's locks, beside the room's
	Spends   string // how it spent: "fenced writes", "plain writes"
	Accepted int64
	Stops    string // its stopped spender: when, and for how long
	Check    string // round 1: its own wallet's check line
	Lost     bool
	Verdict  string // what went wrong, in a sentence; "" when nothing did
}
