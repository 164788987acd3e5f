package judge

import "sync"

// timeline is what happened during one check, for its sentence and its
// picture: one row per holder with the intervals it held the lease, the
// faults the judge injected, and marks (a write, a refusal, the bad one).
// Times are Unix ns.
type timeline struct {
	Start  int64  `json:"start"`
	End    int64  `json:"end"`
	Rows   []*row `json:"rows"`
	Faults []span `json:"faults,omitempty"`
	Marks  []mark `json:"marks,omitempty"`

	mu sync.Mutex
}

// row is one holder.
type row struct {
	Name   string `json:"name"` // "holder A (process 1)"
	Leases []span `json:"leases"`
}

// span is an interval: a lease held (From the grant's return to its
// release, or to its TTL's end when it lapsed), or a fault.
type span struct {
	From  int64  `json:"from"`
	To    int64  `json:"to"` // 0: still open when the check ended
	Label string `json:"label"`
	Bad   bool   `json:"bad,omitempty"` // the interval that broke the property
}

// mark is one instant on a row: "wrote 90", "refused: stale fence".
type mark struct {
	At    int64  `json:"at"`
	Row   string `json:"row"`
	Label string `json:"label"`
	Bad   bool   `json:"bad,omitempty"`
}

func (t *timeline) row(name string) *row {
	for _, r := range t.Rows {
		if r.Name == name {
			return r
		}
	}
	r := &row{Name: name}
	t.Rows = append(t.Rows, r)
	return r
}

// open starts a lease interval on a row.
func (t *timeline) open(name string, from int64, label string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.row(name)
	r.Leases = append(r.Leases, span{From: from, Label: label})
}

// close ends the row's open interval at to.
func (t *timeline) close(name string, to int64, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.row(name)
	for i := len(r.Leases) - 1; i >= 0; i-- {
		if r.Leases[i].To == 0 {
			r.Leases[i].To = to
			if why != "" {
				r.Leases[i].Label += ", " + why
			}
			return
		}
	}
}

// bad marks the row's last interval as the one that broke the property.
func (t *timeline) bad(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.row(name)
	if n := len(r.Leases); n > 0 {
		r.Leases[n-1].Bad = true
	}
}

func (t *timeline) fault(from, to int64, label string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.Faults = append(t.Faults, span{From: from, To: to, Label: label})
}

func (t *timeline) mark(at int64, name, label string, bad bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.row(name)
	t.Marks = append(t.Marks, mark{At: at, Row: name, Label: label, Bad: bad})
}
