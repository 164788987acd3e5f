package history

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// PageOps is about how many operations WritePage shows of each history:
// porcupine's page draws every one, and a load-test phase has tens of
// thousands.
const PageOps = 200

// PageLimits bound what WritePage spends on a page, all sections
// together: half the time on finding each section's window, the rest on
// ordering what it draws.
var PageLimits = Limits{Timeout: 5 * time.Second, Memory: 128 << 20}

// Section is one history on a page: a phase's or a strategy's, with its
// verdict (Check's).
type Section struct {
	Label   string
	History *Recorder
	Verdict Verdict
}

// WritePage writes porcupine's page (one self-contained HTML file) to w,
// with a window of each section's history: one wallet, about PageOps of
// its operations. When the verdict is No it is the wallet no order
// explains, around the first operation that breaks it; otherwise the
// first wallet, from its start. Under each window a row says, in words,
// what porcupine's check of it found, beside the verdict of the whole
// history.
//
// A window cut from a longer history stays honest: operations in flight
// at either edge are drawn as unknown outcomes, and a window that starts
// after the wallet's Set starts from any balance, which the first read
// pins. The checks are bounded by lim (zero fields: PageLimits') and by
// ctx: what is left unchecked is drawn as unknown.
func WritePage(ctx context.Context, w io.Writer, sections []Section, lim Limits) error {
	start := time.Now()
	lim = lim.or(PageLimits)
	find := newBudget(ctx, Limits{Timeout: lim.Timeout / 2, Memory: lim.Memory}, start)
	type drawn struct {
		s          Section
		n          int   // operations porcupine takes of its window
		from, till int64 // the window's first call and last return
	}
	var shown []drawn
	var all []porcupine.Operation
	for _, s := range sections {
		win := window(find, s.History.Ops(), s.Verdict)
		if len(win) == 0 {
			continue
		}
		i := len(shown)
		label := fmt.Sprintf("%s, wallet %d (linearizable=%s)", s.Label, win[0].Wallet, s.Verdict)
		for j := range win { // window's own copy
			win[j].Wallet = int64(i) // one partition per section: its wallet, moved to a key of its own
		}
		o := operations(win)
		d := drawn{s: s, n: len(o), from: o[0].Call}
		for j := range o {
			o[j].Metadata = label
			d.from, d.till = min(d.from, o[j].Call), max(d.till, o[j].Return)
		}
		shown = append(shown, d)
		all = append(all, o...)
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
	draw := newBudget(ctx, lim, start)
	_, info := draw.search(all, true)
	why := draw.stopped(len(all))
	if draw.why.Load() == interrupted {
		// The search was abandoned: draw the operations with no order.
		_, info = porcupine.CheckOperationsVerbose(Model, all, time.Nanosecond)
	}
	var notes []porcupine.Annotation
	var said []string // each window's lines, for the page's head
	partials := info.PartialLinearizations()
	for i, d := range shown {
		full := i < len(partials) && slices.ContainsFunc(partials[i], func(p []int) bool { return len(p) == d.n })
		say := "this window: linearizable=yes, in the order drawn"
		switch {
		case full:
		case why != "":
			say = "this window: linearizable=unknown: " + why
		default:
			say = fmt.Sprintf("this window: linearizable=no: no order of its %d operations explains what they returned", d.n)
		}
		whole := fmt.Sprintf("the whole history: linearizable=%s", d.s.Verdict)
		if d.s.Verdict.Why != "" {
			whole += " (" + d.s.Verdict.Why + ")"
		}
		notes = append(notes, porcupine.Annotation{Tag: d.s.Label, Start: d.from, End: d.till, Description: say, Details: whole})
		said = append(said, fmt.Sprintf("<li><b>%s</b>: %s; %s.</li>", html.EscapeString(d.s.Label), html.EscapeString(say), html.EscapeString(whole)))
	}
	info.AddAnnotations(notes)
	var b bytes.Buffer
	if err := porcupine.Visualize(Model, info, &b); err != nil {
		return fmt.Errorf("history: write the page: %w", err)
	}
	page := strings.Replace(b.String(), "<body>", "<body>\n"+fmt.Sprintf(pageHead, strings.Join(said, "\n")), 1)
	if _, err := io.WriteString(w, page); err != nil {
		return fmt.Errorf("history: write the page: %w", err)
	}
	return nil
}

// pageHead says in words, above porcupine's drawing, what the page shows
// and what each window's check found.
const pageHead = `<div style="max-width: 60em; margin: 45px 1em 0">
<h1 style="font-size: 1.3em">Histories of spends, checked for linearizability</h1>
<p>Each numbered row is a worker; each bar is one operation on the wallet, from its call to its return,
with what it did (<i>spend 10, read 100 → accepted</i>). The history is linearizable when some order of the
operations, each taking effect at one instant within its bar, explains every result. The lines are the
instants the checker tried: grey where the order held (Valid LP, a linearization point), red where no order
could take the next operation (Invalid LP). Hover over a bar to see the longest order that takes it;
<i>jump to first error</i> goes to the first operation no order explains. A window cut from a longer history
draws the operations in flight at its edges as unknown outcomes, which may have landed or not. The rows under
the workers repeat what was found for each window:</p>
<ul>
%s
</ul>
</div>`

// window picks what WritePage shows of ops (see there), searching within
// b. When b runs out before the window is found, it shows the first
// wallet's (or the one no order explains) from its start.
func window(b *budget, ops []Op, v Verdict) []Op {
	parts := byWallet(ops)
	if len(parts) == 0 {
		return nil
	}
	w, ok := v.Wallet, v.Linearizable == No
	if _, there := parts[w]; !ok || !there {
		w = slices.Min(slices.Collect(maps.Keys(parts)))
	}
	var kept []Op
	for _, op := range parts[w] {
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
		n := sort.Search(len(kept), func(n int) bool { return refuted(b, span(kept, 0, n)) })
		if b.spent() {
			return span(kept, 0, PageOps-1)
		}
		last = min(n, len(kept)-1)
	}
	first := max(0, last-PageOps+1)
	// Widen a window that lost the anomaly's context, up to 4 pages.
	for first > 0 && ok && !refuted(b, span(kept, first, last)) && last-first < 4*PageOps {
		if b.spent() {
			break
		}
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

// refuted says whether a search within b showed that no order explains
// ops: false when one does, or when b stopped it first.
func refuted(b *budget, ops []Op) bool {
	res, _ := b.search(operations(ops), false)
	return res == porcupine.Illegal && b.why.Load() == running
}
