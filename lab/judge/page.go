package judge

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
)

// writePage writes the timelines of rep's checks to an HTML page: for
// each property its verdict in words, and a drawing with one row per
// holder, its leases as bars, the faults the judge injected shaded, and
// what each holder did marked. It fits a laptop's width.
func writePage(w io.Writer, rep Report) error {
	var checks []pageCheck
	for _, v := range rep.Verdicts {
		checks = append(checks, newPageCheck(v))
	}
	sort.SliceStable(checks, func(i, j int) bool { return checks[i].rank < checks[j].rank })
	return pageTmpl.Execute(w, struct {
		Report
		Checks []pageCheck
	}{rep, checks})
}

type pageCheck struct {
	Verdict
	Class  string
	Note   string // what the drawing leaves out
	Rows   []pageRow
	Faults []pageBox
	Ticks  []pageTick
	rank   int
}

type pageRow struct {
	Name  string
	Bars  []pageBox
	Marks []pageBox
}

type pageBox struct {
	Left, Width float64 // percent of the axis
	Label       string
	Bad         bool
	Below       bool // a mark's label under the line, so that neighbours do not collide
	Flip        bool // near the right edge: the label goes to the left
}

type pageTick struct {
	Left  float64
	Label string
	Last  bool
}

func newPageCheck(v Verdict) pageCheck {
	pc := pageCheck{Verdict: v, Class: map[string]string{pass: "pass", fail: "fail", broken: "broken", unknown: "unknown", notClaimed: "unknown"}[v.Outcome]}
	pc.rank = map[string]int{fail: 0, broken: 1, unknown: 2, pass: 3, notClaimed: 4}[v.Outcome]
	tl := v.Timeline
	if tl == nil || len(tl.Rows) == 0 {
		return pc
	}
	rows := slices.Clone(tl.Rows)
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name }) // holder A, B, C...
	from, to := tl.Start, tl.End+(tl.End-tl.Start)/12                                  // room on the right for the last labels
	const most = 10
	if len(rows) > most { // a burst: draw the rows around the bad lease, or the first few
		var bad *span
		for _, r := range rows {
			for i := range r.Leases {
				if r.Leases[i].Bad {
					bad = &r.Leases[i]
				}
			}
		}
		if bad != nil {
			lo, hi := bad.From-int64(20e6), max(bad.To, bad.From)+int64(20e6)
			var near []*row
			for _, r := range rows {
				for _, l := range r.Leases {
					if l.From < hi && end(l, to) > lo {
						near = append(near, r)
						break
					}
				}
			}
			if len(near) > most {
				near = near[:most]
			}
			pc.Note = fmt.Sprintf("%d holders took the lock; the drawing shows the %d around the overlap, 20 ms either side. Holder P2.1.3 is process 2's goroutine 1, taking the lock for the 4th time (counted from 0).", len(rows), len(near))
			rows, from, to = near, lo, hi
		} else {
			pc.Note = fmt.Sprintf("%d holders took the lock, one after another; the drawing shows the first %d. Holder P2.1.3 is process 2's goroutine 1, taking the lock for the 4th time (counted from 0).", len(rows), most)
			rows = rows[:most]
			to = end(rows[most-1].Leases[len(rows[most-1].Leases)-1], to)
		}
	}
	span := float64(max(to-from, 1))
	pos := func(t int64) float64 { return math.Max(0, math.Min(100, 100*float64(t-from)/span)) }
	for _, r := range rows {
		pr := pageRow{Name: r.Name}
		for _, l := range r.Leases {
			left := pos(l.From)
			w := math.Max(0.4, pos(end(l, to))-left)
			pr.Bars = append(pr.Bars, pageBox{Left: left, Width: w, Label: l.Label, Bad: l.Bad, Flip: left+w > 75})
		}
		last := -100.0
		for _, m := range tl.Marks {
			if m.Row == r.Name && m.At >= from && m.At <= to {
				// A label goes under the line only when the mark before
				// it on the row is too close for both to fit above.
				x := pos(m.At)
				below := x-last < 15 && (len(pr.Marks) == 0 || !pr.Marks[len(pr.Marks)-1].Below)
				pr.Marks = append(pr.Marks, pageBox{Left: x, Label: m.Label, Bad: m.Bad, Below: below, Flip: x > 60})
				last = x
			}
		}
		pc.Rows = append(pc.Rows, pr)
	}
	for _, f := range tl.Faults {
		left := pos(f.From)
		pc.Faults = append(pc.Faults, pageBox{Left: left, Width: math.Max(0.4, pos(max(f.To, f.From))-left), Label: f.Label, Flip: left > 60})
	}
	step := niceStep(float64(to-from) / 1e9 / 8)
	for s := math.Ceil(float64(from-tl.Start)/1e9/step) * step; s <= float64(to-tl.Start)/1e9+1e-9; s += step {
		pc.Ticks = append(pc.Ticks, pageTick{Left: pos(tl.Start + int64(s*1e9)), Label: trimSec(s), Last: pos(tl.Start+int64(s*1e9)) > 96})
	}
	return pc
}

// end is where a span ends on the drawing: its end, or the check's when
// it was still open.
func end(s span, checkEnd int64) int64 {
	if s.To == 0 {
		return checkEnd
	}
	return s.To
}

// niceStep rounds a tick step in seconds to 1, 2 or 5 times a power of ten.
func niceStep(s float64) float64 {
	if s <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(s)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= s {
			return m * p
		}
	}
	return 10 * p
}

func trimSec(s float64) string {
	t := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", s), "0"), ".")
	return t + " s"
}

var pageTmpl = template.Must(template.New("page").Funcs(template.FuncMap{
	"pct": func(f float64) string { return fmt.Sprintf("%.2f%%", f) },
}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>The judge: {{.Lock}}, seed {{.Seed}}</title>
<style>
body { font: 15px/1.45 system-ui, sans-serif; margin: 24px auto; max-width: 1240px; padding: 0 16px; color: #1d1d1f; }
h1 { font-size: 22px; margin: 0 0 4px; }
.lead, .legend { color: #444; margin: 4px 0; }
.legend span.k { display: inline-block; width: 28px; height: 12px; vertical-align: middle; margin: 0 4px 0 12px; border-radius: 3px; }
section { border-top: 1px solid #ddd; padding: 14px 0 8px; }
h2 { font-size: 16px; margin: 0 0 4px; }
.verdict { font-weight: 700; text-transform: uppercase; font-size: 13px; padding: 1px 7px; border-radius: 4px; margin-right: 8px; }
.pass .verdict { background: #d9f2de; color: #14532d; }
.fail .verdict { background: #fde0e0; color: #9b1c1c; }
.broken .verdict { background: #fdecc8; color: #8a4b00; }
.unknown .verdict { background: #e8e8ee; color: #444; }
.why { margin: 2px 0 8px; max-width: 1150px; }
.note { color: #666; font-size: 13px; margin: 0 0 6px; }
.chart { position: relative; margin-left: 230px; width: calc(100% - 240px); }
.row { position: relative; height: 52px; border-bottom: 1px dotted #ccc; }
.name { position: absolute; left: -230px; width: 220px; top: 13px; font-size: 13px; text-align: right; white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
.bar { position: absolute; top: 15px; height: 16px; background: #5b8def; border-radius: 3px; }
.bar.bad { background: #d93025; }
.bar span { position: absolute; left: 0; top: 17px; font-size: 11px; color: #333; white-space: nowrap; }
.mark { position: absolute; top: 9px; width: 0; height: 28px; border-left: 2px solid #222; }
.mark.bad { border-left: 3px solid #d93025; }
.mark span { position: absolute; left: 4px; top: -9px; font-size: 11px; white-space: nowrap; background: rgba(255,255,255,.85); }
.mark.below span { top: 30px; }
.mark.bad span { color: #d93025; font-weight: 700; }
.bar.flip span { left: auto; right: 0; }
.mark.flip span { left: auto; right: 4px; }
.faultlabel span.flip { transform: translateX(-100%); }
.axis span.last { transform: translateX(-100%); }
.chart { overflow: visible; }
body { overflow-x: hidden; }
.fault { position: absolute; top: 0; bottom: 0; background: repeating-linear-gradient(45deg, rgba(120,120,120,.13), rgba(120,120,120,.13) 6px, rgba(120,120,120,.22) 6px, rgba(120,120,120,.22) 12px); border-left: 1px solid #999; }
.faultlabel { position: relative; height: 18px; font-size: 12px; color: #555; }
.faultlabel span { position: absolute; white-space: nowrap; }
.axis { position: relative; height: 20px; font-size: 11px; color: #666; border-top: 1px solid #999; }
.axis span { position: absolute; top: 2px; transform: translateX(-50%); white-space: nowrap; }
.axis .unit { position: absolute; left: -230px; width: 220px; text-align: right; }
</style></head><body>
<h1>The judge: {{.Lock}}</h1>
<p class="lead">Seed {{.Seed}}: judging {{.Lock}} again with this seed (<code>SEED={{.Seed}}</code> beside <code>make judge</code>'s other settings, or <code>Options{Seed: {{.Seed}}}</code> in a test) replays this schedule. {{.Count}}. Failures come first.</p>
<p class="legend">How to read a drawing: each row is one holder, a process that calls the lock, named by a letter as in the sentence above it;
<span class="k" style="background:#5b8def"></span>a lease it held, from the moment its Acquire returned to its release, or to the end of its TTL when it lapsed;
<span class="k" style="background:#d93025"></span>the lease that broke the property;
<span class="k" style="background:repeating-linear-gradient(45deg,#ccc,#ccc 4px,#aaa 4px,#aaa 8px)"></span>a fault the judge injected (a holder stopped between two commands, a held reply, a pause, a kill, a restart), named above the rows;
a black line is something a holder did (a read, a write, a call that returned), a red one what should not have happened. Times are seconds since the drawing began: the check's start, or for a failure at a pause point, that point's start.</p>
{{range .Checks}}<section class="{{.Class}}">
<h2><span class="verdict">{{.Outcome}}</span>{{.Chapter}}: {{.Title}}</h2>
<p class="why">{{.Why}}</p>
{{if .Note}}<p class="note">{{.Note}}</p>{{end}}
{{if .Rows}}<div class="chart">
{{if .Faults}}<div class="faultlabel">{{range .Faults}}<span{{if .Flip}} class="flip"{{end}} style="left:{{pct .Left}}">▼ {{.Label}}</span>{{end}}</div>{{end}}
<div style="position:relative">
{{range .Faults}}<div class="fault" style="left:{{pct .Left}};width:{{pct .Width}}" title="{{.Label}}"></div>{{end}}
{{range .Rows}}<div class="row"><div class="name" title="{{.Name}}">{{.Name}}</div>
{{range .Bars}}<div class="bar{{if .Bad}} bad{{end}}{{if .Flip}} flip{{end}}" style="left:{{pct .Left}};width:{{pct .Width}}" title="{{.Label}}"><span>{{.Label}}</span></div>{{end}}
{{range .Marks}}<div class="mark{{if .Bad}} bad{{end}}{{if .Below}} below{{end}}{{if .Flip}} flip{{end}}" style="left:{{pct .Left}}" title="{{.Label}}"><span>{{.Label}}</span></div>{{end}}
</div>{{end}}
</div>
<div class="axis"><span class="unit">seconds</span>{{range .Ticks}}<span{{if .Last}} class="last"{{end}} style="left:{{pct .Left}}">{{.Label}}</span>{{end}}</div>
</div>{{end}}
</section>
{{end}}
</body></html>
`))
