//go:build unix

package main

// The printing side of the drill: a line per run, the table nemesis x
// strategy, or one JSON object per run; and each cell against the lesson.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"example.com/walletlock/lab/drill"
	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/lesson"
)

type report struct {
	w      io.Writer
	asJSON bool
	rows   []drill.Result
}

func newReport(w io.Writer, asJSON bool) *report { return &report{w: w, asJSON: asJSON} }

func (r *report) header(ctx context.Context, pool *pgxpool.Pool, c drill.Config, nemeses []string) {
	if r.asJSON {
		return
	}
	rv := launch.RedisVersion()
	if rv == "" {
		rv = "?"
	}
	pv, _ := env.PostgresVersion(ctx, pool)
	where := "on loopback ports"
	if slices.ContainsFunc(nemeses, drill.IsPartition) {
		where += " (the partition's: in three network namespaces of its own)"
	}
	fmt.Fprintf(r.w, "drill: redis-server %s of its own %s, PostgreSQL %s; %d spender processes x %d spends at a time, %d wallets, TTL %v, work %v\n",
		rv, where, pv, c.Procs, c.Conc, c.Wallets, c.TTL, c.Work)
}

// row is a JSON row: the keys of drill.Result plus the lesson's verdict.
type row struct {
	drill.Result
	Verdict string `json:"verdict"`
	Want    string `json:"want"`
}

func (r *report) add(res drill.Result) {
	r.rows = append(r.rows, res)
	cell, _ := lesson.DrillWant(res.Nemesis, res.Strategy)
	if r.asJSON {
		v := lesson.Broken
		if res.OK {
			v = lesson.OK
		}
		json.NewEncoder(r.w).Encode(row{res, v, cell.Want})
		return
	}
	fmt.Fprintf(r.w, "%-8s %-7s seed %-3d %s  double grants %d, faults %d: %s\n",
		res.Nemesis, res.Strategy, res.Seed, res.CheckLine(), res.DoubleGrants, res.Faults, res.Note)
	if res.WindowMS != nil {
		ms := func(p *int64) time.Duration { return time.Duration(*p) * time.Millisecond }
		fmt.Fprintf(r.w, "    the old primary granted locks for %v after the cut; two primaries granted at once for %v, %d double grants between their holders; lost at the heal: %s\n",
			ms(res.OldPrimaryMS), ms(res.WindowMS), res.WindowDoubleGrants, res.Lost)
	}
}

// skip says, in the text report, that a nemesis does not apply to a
// strategy.
func (r *report) skip(nemesis, strategy, why string) {
	if !r.asJSON {
		fmt.Fprintf(r.w, "%-8s %-7s skipped: %s\n", nemesis, strategy, why)
	}
}

// cell gathers the runs of one nemesis and strategy.
type cell struct {
	nemesis, strategy                  string
	seeds, broken, unknown, faults, dg int
	off                                int64
	want                               lesson.DrillCell
	old, both, wdg                     []string // each seed's measure of a partition (see drill.Window)
}

func (c cell) match() bool {
	got := c.seeds - c.broken // runs that gave OK
	if c.want.Want == lesson.Broken {
		got = c.broken
	}
	return float64(got) >= math.Ceil(c.want.Share*float64(c.seeds))
}

func (r *report) cells() []cell {
	var out []cell
	index := map[[2]string]int{}
	for _, res := range r.rows {
		k := [2]string{res.Nemesis, res.Strategy}
		i, ok := index[k]
		if !ok {
			want, _ := lesson.DrillWant(res.Nemesis, res.Strategy)
			i = len(out)
			index[k] = i
			out = append(out, cell{nemesis: res.Nemesis, strategy: res.Strategy, want: want})
		}
		c := &out[i]
		c.seeds++
		if !res.OK {
			c.broken++
		}
		c.off += res.MoneyOff
		c.dg += res.DoubleGrants
		c.unknown += res.Unknown
		c.faults += res.Faults
		if res.WindowMS != nil {
			ms := func(p *int64) string {
				return (time.Duration(*p) * time.Millisecond).Round(10 * time.Millisecond).String()
			}
			c.old, c.both, c.wdg = append(c.old, ms(res.OldPrimaryMS)), append(c.both, ms(res.WindowMS)), append(c.wdg, fmt.Sprint(res.WindowDoubleGrants))
		}
	}
	return out
}

func (r *report) table() {
	if r.asJSON || len(r.rows) == 0 {
		return
	}
	fmt.Fprintln(r.w)
	tab := harness.NewTable(r.w, "")
	tab.Row("nemesis", "strategy", "seeds", "BROKEN", "money off", "double grants", "unknown", "faults", "lesson")
	for _, c := range r.cells() {
		verdict := "as the lesson says"
		if !c.match() {
			verdict = "NOT as the lesson says"
		}
		tab.Row(c.nemesis, c.strategy, c.seeds, c.broken, c.off, c.dg, c.unknown, c.faults, c.want.Want+", "+verdict)
	}
	tab.Flush()
	// The partition nemeses' cells add each seed's measure of the partition.
	cells := slices.DeleteFunc(r.cells(), func(c cell) bool { return c.old == nil })
	if len(cells) == 0 {
		return
	}
	fmt.Fprintln(r.w)
	tab = harness.NewTable(r.w, "")
	tab.Row("nemesis", "strategy", "old primary granted for", "two primaries at once", "double grants across them", "(each seed)")
	for _, c := range cells {
		tab.Row(c.nemesis, c.strategy, strings.Join(c.old, " "), strings.Join(c.both, " "), strings.Join(c.wdg, " "), "")
	}
	tab.Flush()
}

// judge holds every cell to the lesson table: a cell whose seeds do not
// give what it says makes Finish exit 1.
func (r *report) judge(rep *harness.Report, stderr io.Writer) {
	for _, c := range r.cells() {
		if !c.match() {
			rep.Fail(stderr, fmt.Errorf("%s under %s: %d of %d seeds BROKEN, the lesson says %s (%s)",
				c.strategy, c.nemesis, c.broken, c.seeds, c.want.Want, c.want.What))
		}
	}
	for _, res := range r.rows {
		if err := res.HistoryMiss(); err != nil {
			rep.Fail(stderr, err)
		}
	}
}
