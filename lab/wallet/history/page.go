package history

import (
	"fmt"
	"sort"

	"github.com/anishathalye/porcupine"
)

// PageOps is about how many operations WritePage shows of each history:
// porcupine's page draws every one, and a step 6 phase has tens of
// thousands.
const PageOps = 200

// Section is one history on a page: a strategy's, with its verdict.
type Section struct {
	Label   string
	Ops     []Op
	Verdict Verdict
}

// WritePage writes porcupine's page (one self-contained HTML file, no
// network needed) with a window of each section's history: one wallet,
// about PageOps of its operations. When the verdict is No it is the
// wallet no order explains, around the first operation that breaks it;
// otherwise the first wallet, from its start. The page shows porcupine's
// own check of what it draws: a linearization, or the longest partial
// ones and the operation none of them can take.
//
// A window cut from a longer history stays honest: operations in flight
// at either edge are drawn as unknown outcomes (they may have landed
// either side of it), and a window that starts after the wallet's Set
// starts from any balance, which the first read pins.
func WritePage(path string, sections []Section) error {
	var all []porcupine.Operation
	for i, s := range sections {
		for _, op := range window(s.Ops, s.Verdict) {
			// One partition per section: its wallet, moved to a key of its own.
			label := fmt.Sprintf("%s, wallet %d (linearizable=%s)", s.Label, op.Wallet, s.Verdict)
			op.Wallet = int64(i)
			o := operations([]Op{op})
			if len(o) == 0 {
				continue
			}
			o[0].Metadata = label
			all = append(all, o[0])
		}
	}
	// An unknown outcome's return is open: the end of the whole page.
	end := int64(0)
	for _, o := range all {
		if o.Input.(Op).Result != Unknown {
			end = max(end, o.Return)
		}
	}
	for i := range all {
		if all[i].Input.(Op).Result == Unknown {
			all[i].Return = max(end, all[i].Call) + 1
		}
	}
	_, info := porcupine.CheckOperationsVerbose(Model, all, 0)
	if err := porcupine.VisualizePath(Model, info, path); err != nil {
		return fmt.Errorf("history: write the page: %w", err)
	}
	return nil
}

// window picks what WritePage shows of ops (see there).
func window(ops []Op, v Verdict) []Op {
	parts := byWallet(ops)
	if len(parts) == 0 {
		return nil
	}
	w, ok := v.Wallet, v.Linearizable == No
	if _, there := parts[w]; !ok || !there {
		w = -1
		for id := range parts {
			if w == -1 || id < w {
				w = id
			}
		}
	}
	part := parts[w]
	var kept []Op
	for _, op := range part {
		if op.Result != Failed {
			kept = append(kept, op)
		}
	}
	if len(kept) <= PageOps {
		return kept
	}
	last := PageOps - 1
	if ok {
		// The shortest window from the start that no order explains.
		n := sort.Search(len(kept), func(n int) bool { return !linearizable(span(kept, 0, n)) })
		last = min(n, len(kept)-1)
	}
	first := max(0, last-PageOps+1)
	// Widen a window that lost the anomaly's context, up to 4 pages.
	for first > 0 && ok && linearizable(span(kept, first, last)) && last-first < 4*PageOps {
		first = max(0, first-PageOps)
	}
	return span(kept, first, last)
}

// span cuts the window of ops (sorted by call) from ops[first] to
// ops[last], which it keeps whole: it runs from the first one's call (from
// the start when first is 0) to the latest return among them.
func span(ops []Op, first, last int) []Op {
	from, to := ops[first].Call, ops[last].Return
	if first == 0 {
		from = 0
	}
	for _, op := range ops[first : last+1] {
		to = max(to, op.Return)
	}
	return cut(ops, from, to)
}

// cut returns the operations called from from to to: those that returned
// before from or were called after to are left out, and those in flight
// at either edge become unknown outcomes.
func cut(ops []Op, from, to int64) []Op {
	var out []Op
	for _, op := range ops {
		switch {
		case op.Return < from, op.Call > to:
			continue
		case op.Call < from || op.Return > to:
			if op.Result == Set || op.Result == Read {
				continue // a read with no effect, or a Set from before: any balance
			}
			op.Result, op.Read = Unknown, NoRead
		}
		out = append(out, op)
	}
	return out
}

func linearizable(ops []Op) bool {
	return porcupine.CheckOperationsTimeout(Model, operations(ops), 0) != porcupine.Illegal
}
