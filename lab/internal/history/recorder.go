package history

import "sync"

// DefaultCap is the most spends a Recorder keeps unless told otherwise:
// 56 bytes each, 28 MB at most, more than a default load-test phase makes.
const DefaultCap = 500_000

// chunk is how many spends a Recorder allocates at a time: it grows
// without copying what it holds.
const chunk = 8192

// Recorder records one history: each wallet's starting balance (Set),
// every spend made on them (Add), and the balances read back at the end
// (Read). Check then judges it, and a Section of a page draws it.
//
// A Recorder is safe for concurrent use. A nil *Recorder records nothing.
// It keeps at most its cap of spends and counts those it had to drop: a
// history with holes proves nothing, and its Check is unknown.
type Recorder struct {
	mu      sync.Mutex
	chunks  [][]Op // the spends
	marks   []Op   // the Sets and Reads
	n, max  int
	dropped int
}

// NewRecorder returns a Recorder that keeps at most max spends (DefaultCap
// when max <= 0).
func NewRecorder(max int) *Recorder {
	if max <= 0 {
		max = DefaultCap
	}
	return &Recorder{max: max}
}

// Set records that wallet id's balance was just set to balance: the start of
// its history.
func (r *Recorder) Set(id, balance int64) {
	at := Now()
	r.Add(Op{Wallet: id, Call: at, Return: at, Read: balance, Result: Set})
}

// Read records that wallet id's balance was just read back as balance: the
// end of its history.
func (r *Recorder) Read(id, balance int64) {
	at := Now()
	r.Add(Op{Wallet: id, Call: at, Return: at, Read: balance, Result: Read})
}

// Add records op, a spend (a spender process's report, a load test
// worker's). A spend past the cap is dropped and counted.
func (r *Recorder) Add(op Op) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.Result == Set || op.Result == Read {
		r.marks = append(r.marks, op)
		return
	}
	if r.n >= r.max {
		r.dropped++
		return
	}
	last := len(r.chunks) - 1
	if last < 0 || len(r.chunks[last]) == cap(r.chunks[last]) {
		r.chunks = append(r.chunks, make([]Op, 0, min(chunk, r.max-r.n)))
		last++
	}
	r.chunks[last] = append(r.chunks[last], op)
	r.n++
}

// Ops returns a copy of the operations kept: the spends in the order they
// were added, then the Sets and Reads.
func (r *Recorder) Ops() []Op {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Op, 0, r.n+len(r.marks))
	for _, c := range r.chunks {
		out = append(out, c...)
	}
	return append(out, r.marks...)
}

// Len is how many spends the recorder kept.
func (r *Recorder) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}

// Dropped is how many spends Add dropped because the recorder was full.
func (r *Recorder) Dropped() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped
}
