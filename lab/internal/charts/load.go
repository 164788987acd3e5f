package charts

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/lesson"
)

// load is the part of a load report the pages read: the lab's load test's
// JSON report (loadtest.Report, which workshop files of the lesson's first
// revision hold as step 6's), or the root's step 6's -json output, which
// gives a row's rate, wait and verdict and nothing of its load (Root).
type load struct {
	Root    bool   `json:"-"` // the root's step 6: its rows have "verdict", its load comes from the workshop's flags
	Started string `json:"started"`
	Params  struct {
		Workers  json.RawMessage `json:"workers"`
		Wallets  int             `json:"wallets"`
		Duration string          `json:"duration"`
		Work     string          `json:"work"`
		Hot      bool            `json:"hot"`
	} `json:"params"`
	System struct {
		Redis    string `json:"redis_version"`
		Postgres string `json:"postgres_version"`
		Go       string `json:"go_version"`
		OS       string `json:"os"`
		CPUs     int    `json:"cpus"`
	} `json:"system"`
	Rows        []loadRow `json:"strategies"`
	Interrupted bool      `json:"interrupted"`
	NotRun      []string  `json:"not_run"`
	Args        []string  `json:"-"` // the root's step 6's flags, as the workshop ran it (Machine.LoadArgs)
}

// loadRow is one strategy's figures at one level of contention. Workers,
// FIFOBound and VsNone come with a contention sweep and newer runs; a
// pointer is nil when the run did not give the key.
type loadRow struct {
	Strategy      string   `json:"strategy"`
	Workers       int      `json:"workers"`
	PerSecond     float64  `json:"accepted_per_second"`
	Attempts      int64    `json:"attempts"`
	Errors        int64    `json:"errors"`
	Unknown       int64    `json:"unknown"`
	LockWait      *latency `json:"lock_wait"`
	Latency       latency  `json:"spend_latency"`
	RedisPerSpend *float64 `json:"redis_commands_per_accepted_spend"`
	Ceiling       float64  `json:"ceiling_per_second"`
	Efficiency    float64  `json:"efficiency"`
	CeilingNA     string   `json:"ceiling_not_applicable"`
	PoolWait      *latency `json:"pool_wait"`
	PoolWaitShare float64  `json:"pool_wait_share"`
	FIFOBound     *float64 `json:"fifo_bound_ms"`
	VsNone        *float64 `json:"vs_none"`
	Check         string   `json:"check"`
	OK            bool     `json:"ok"`
	Measured      bool     `json:"measured"`
	Note          string   `json:"note"`
	Interrupted   bool     `json:"interrupted"`
	WalletsOff    int      `json:"wallets_off"`
	MoneyOff      int64    `json:"money_off"`
	// The root's step 6 gives these instead: its verdict, and the time a
	// spend took beyond its work (the lock, the round trips).
	Verdict string   `json:"verdict"`
	WaitP99 *float64 `json:"wait_p99_ms"`
}

type latency struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
}

// verdict is the row's verdict as its table gives it (OK, BROKEN or
// NO DATA), and whether that is what the lesson promises.
func (r loadRow) verdict() (string, bool) {
	want := lesson.OK
	if p, ok := lesson.Lookup(lesson.LoadTestStep, r.Strategy); ok {
		want = p.Want
	}
	switch {
	case r.Verdict != "": // the root's step 6
		return r.Verdict, r.Verdict == want
	case r.Check != "" && !r.OK:
		return Broken(r.WalletsOff, r.MoneyOff), want == lesson.Broken
	case !r.Measured:
		return "NO DATA: " + r.Note, false
	}
	return lesson.OK, want == lesson.OK
}

// decodeLoad reads a load report (see load). The texts it keeps are made
// printable (harness.Printable): a workshop file may come from anyone.
func decodeLoad(data []byte) (load, error) {
	var l load
	if err := json.Unmarshal(data, &l); err != nil {
		return l, fmt.Errorf("charts: read step 6's report: %w", err)
	}
	l.Root = len(l.Params.Workers) == 0 && slices.ContainsFunc(l.Rows, func(r loadRow) bool { return r.Verdict != "" })
	if len(l.Params.Workers) > 0 {
		var n int
		var counts []int
		switch {
		case json.Unmarshal(l.Params.Workers, &n) == nil:
			for i := range l.Rows {
				if l.Rows[i].Workers == 0 {
					l.Rows[i].Workers = n
				}
			}
		case json.Unmarshal(l.Params.Workers, &counts) != nil:
			return l, fmt.Errorf("charts: read step 6's report: params.workers is %s, not a count or a list of counts", harness.Printable(string(l.Params.Workers)))
		}
	}
	for _, s := range []*string{&l.Started, &l.Params.Duration, &l.Params.Work} {
		*s = harness.Printable(*s)
	}
	for i := range l.Rows {
		r := &l.Rows[i]
		if r.Strategy == "" {
			return l, fmt.Errorf("charts: read step 6's report: row %d names no strategy", i+1)
		}
		r.Strategy, r.Check, r.Note, r.Verdict = harness.Printable(r.Strategy), harness.Printable(r.Check), harness.Printable(r.Note), harness.Printable(r.Verdict)
		if r.Verdict != "" {
			r.Measured, r.OK = true, r.Verdict == lesson.OK
		}
	}
	return l, nil
}

// load is the machine's step 6, its load read from LoadArgs when the
// report is the root's step 6's, which does not print it.
func (m Machine) load() (load, error) {
	l, err := decodeLoad(m.Load)
	if err != nil || !l.Root {
		return l, err
	}
	l.Args = m.LoadArgs
	return l, nil
}

// strategies lists the strategies of the rows in the order they ran.
func (l load) strategies() []string {
	return distinct(l.Rows, func(r loadRow) string { return r.Strategy })
}

// levels lists the levels of contention (workers) the rows ran at.
func (l load) levels() []int {
	out := distinct(l.Rows, func(r loadRow) int { return r.Workers })
	slices.Sort(out)
	return out
}

// distinct lists what f gives of the rows, each once, in the order it
// first comes.
func distinct[T comparable](rows []loadRow, f func(loadRow) T) []T {
	var out []T
	for _, r := range rows {
		if v := f(r); !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// row finds a strategy's row at a level.
func (l load) row(strategy string, workers int) (loadRow, bool) {
	i := slices.IndexFunc(l.Rows, func(r loadRow) bool { return r.Strategy == strategy && r.Workers == workers })
	if i < 0 {
		return loadRow{}, false
	}
	return l.Rows[i], true
}

// SaveLoad writes step 6's report, in its JSON form, to path as one HTML
// page (see WriteLoad).
func SaveLoad(path string, reportJSON []byte, poolLine string) error {
	if err := harness.SavePage(path, func(w io.Writer) error { return WriteLoad(w, reportJSON, poolLine) }); err != nil {
		return fmt.Errorf("charts: write %s: %w", path, err)
	}
	return nil
}

// WriteLoad writes step 6's report, given in its JSON form
// (loadtest.Report), as one HTML page: the table, accepted spends per
// second and p99 lock wait per strategy, and for a sweep, efficiency and
// p99 wait against contention with the fair-queue bound. poolLine is the
// text report's line when the pool limited a row (Report.PoolLine).
func WriteLoad(w io.Writer, reportJSON []byte, poolLine string) error {
	l, err := decodeLoad(reportJSON)
	if err != nil {
		return err
	}
	page := loadPage{Title: "walletlock load test: every strategy under load", load: l}
	page.Setup = setupLine(l)
	page.PoolLine = strings.TrimSpace(poolLine)
	if page.Charts, err = loadCharts(l); err != nil {
		return err
	}
	for _, r := range l.Rows {
		v, match := r.verdict()
		if r.Interrupted {
			v += " (interrupted)"
		}
		tr := tableRow{Strategy: r.Strategy, Workers: r.Workers, Verdict: v, Match: match, Control: r.Strategy == "none",
			PerSecond: fmt.Sprintf("%.0f", r.PerSecond), Attempts: r.Attempts, Errors: r.Errors, Unknown: r.Unknown,
			WaitP50: "n/a", WaitP99: "n/a", SpendP50: FormatMS(r.Latency.P50), SpendP99: FormatMS(r.Latency.P99),
			RedisPerSpend: "n/a", Efficiency: percent(r.Efficiency, r.Ceiling > 0), VsNone: "n/a"}
		if r.LockWait != nil {
			tr.WaitP50, tr.WaitP99 = FormatMS(r.LockWait.P50), FormatMS(r.LockWait.P99)
		}
		if r.PoolWait != nil {
			tr.PoolP99, tr.PoolShare = FormatMS(r.PoolWait.P99), percent(r.PoolWaitShare, true)
			page.HasPoolWait = true
		}
		if r.CeilingNA != "" {
			tr.Efficiency = "n/a (" + r.CeilingNA + ")"
		}
		if r.RedisPerSpend != nil {
			tr.RedisPerSpend = fmt.Sprintf("%.2f", *r.RedisPerSpend)
		}
		switch {
		case r.FIFOBound != nil && *r.FIFOBound > 0:
			tr.Bound = FormatMS(*r.FIFOBound)
		case r.FIFOBound != nil:
			tr.Bound = "n/a" // atomic: nothing queues, so there is no bound
		}
		page.HasBound = page.HasBound || r.FIFOBound != nil
		if r.VsNone != nil {
			tr.VsNone = percent(*r.VsNone, *r.VsNone > 0) // 0: none did not run, or measured nothing
			page.HasVsNone = true
		}
		page.Rows = append(page.Rows, tr)
	}
	return render(w, "load", page)
}

type loadPage struct {
	load
	Title    string
	Setup    string
	PoolLine string // the text report's line when the pool was the limit
	Rows     []tableRow
	Charts   []template.HTML
	// Whether any row gives the wait for a connection, the fair-queue
	// bound, or the rate against none's: runs before they were measured
	// do not, and their columns are left out.
	HasPoolWait, HasBound, HasVsNone bool
	Refresh                          int // never: a report does not load itself again
}

// Sweep reports whether the run measured several levels of contention.
func (p loadPage) Sweep() bool { return len(p.levels()) > 1 }

type tableRow struct {
	Strategy                                    string
	Workers                                     int
	PerSecond                                   string
	Attempts, Errors, Unknown                   int64
	WaitP50, WaitP99, Bound, SpendP50, SpendP99 string
	RedisPerSpend, Efficiency, VsNone, Verdict  string
	PoolP99, PoolShare                          string
	Match                                       bool
	Control                                     bool // none: drawn as the broken control
}

// setupLine says what the run did, as the text table's first line does;
// for the root's step 6, from the flags the workshop gave it.
func setupLine(l load) string {
	if l.Root {
		return rootSetup(l.Args)
	}
	p := l.Params
	workers := strings.Trim(string(p.Workers), "[]")
	if lv := l.levels(); len(lv) > 1 {
		var each []string
		for _, n := range lv {
			each = append(each, strconv.Itoa(n))
		}
		workers = strings.Join(each, ", ")
	}
	return fmt.Sprintf("%s workers spending %s, %s of work, %s per strategy.", workers, Spread(p.Wallets, p.Hot), p.Work, p.Duration)
}

// rootSetup is setupLine for the root's step 6, run with args: a flag it
// was not given ran at the step's default.
func rootSetup(args []string) string {
	v := map[string]string{"-workers": "the default number of", "-wallets": "the default number of", "-work": "the default amount", "-duration": "the default time"}
	for i := 0; i+1 < len(args); i++ {
		if _, ok := v[args[i]]; ok {
			v[args[i]] = harness.Printable(args[i+1])
			i++
		}
	}
	wallets := "from " + v["-wallets"] + " wallets"
	if v["-wallets"] == "1" {
		wallets = "from one wallet"
	}
	return fmt.Sprintf("%s workers spending %s, %s of work, %s per strategy, in the article's step 6.", v["-workers"], wallets, v["-work"], v["-duration"])
}

// noLock are the strategies that take no lock: none, the broken control,
// and atomic, a script. Both run many times faster than any lock, so they
// get a chart of their own, where the locks' bars would otherwise be
// flattened against theirs.
var noLock = []string{"none", "atomic"}

// controlLabel is how the charts name the control, so that its bar never
// reads as a winner.
const controlLabel = "none (BROKEN)"

// apart splits strategies into the locks and the two without a lock, and
// names the latter for their chart: none as the control, drawn grey.
func apart(names []string) (locks, unlocked, labels []string, grey map[int]bool) {
	grey = map[int]bool{}
	for _, s := range names {
		if !slices.Contains(noLock, s) {
			locks = append(locks, s)
			continue
		}
		if s == "none" {
			grey[len(unlocked)] = true
			labels = append(labels, controlLabel)
		} else {
			labels = append(labels, s)
		}
		unlocked = append(unlocked, s)
	}
	return locks, unlocked, labels, grey
}

// loadCharts draws the run. The chart that teaches comes first: the p99
// lock wait against contention, with the fair-queue bound (or, for a
// single run, the p99 lock wait per strategy); then the locks' rates
// against the serial ceiling, the rates of the two strategies without a
// lock on their own scale, and for a sweep the share of the ceiling.
func loadCharts(l load) ([]template.HTML, error) {
	names, levels := l.strategies(), l.levels()
	locks, unlocked, labels, grey := apart(names)
	var waiting []string // strategies that wait for a lock
	for _, s := range names {
		if slices.ContainsFunc(l.Rows, func(r loadRow) bool { return r.Strategy == s && r.LockWait != nil }) {
			waiting = append(waiting, s)
		}
	}
	wait := func(r loadRow, ok bool) float64 { return value(ok && r.LockWait != nil, waitP99(r)) }
	rate := func(r loadRow, ok bool) float64 { return value(ok, r.PerSecond) }
	// none, the control, passes 100% with its lost updates counted as
	// work, and atomic has no ceiling: either would flatten the locks.
	efficiency := func(r loadRow, ok bool) float64 { return value(ok && r.Ceiling > 0, 100*r.Efficiency) }
	// Bars: one series per level, so that a single run draws one bar per
	// strategy.
	perLevel := func(strategies []string, pick func(loadRow, bool) float64) []series {
		var out []series
		for _, n := range levels {
			ss := series{name: fmt.Sprintf("%d workers", n)}
			for _, s := range strategies {
				ss.values = append(ss.values, pick(l.row(s, n)))
			}
			out = append(out, ss)
		}
		return out
	}
	// Lines: one per strategy, in its colour on every chart of the page.
	perStrategy := func(strategies []string, pick func(loadRow, bool) float64) []series {
		var out []series
		for i, s := range names {
			if !slices.Contains(strategies, s) {
				continue
			}
			ss := series{name: s, colour: i}
			for _, n := range levels {
				ss.values = append(ss.values, pick(l.row(s, n)))
			}
			out = append(out, ss)
		}
		return out
	}
	var out []template.HTML
	var err error
	add := func(c template.HTML, e error) {
		if err = cmp.Or(err, e); err == nil {
			out = append(out, c)
		}
	}
	xs := make([]float64, len(levels))
	for i, n := range levels {
		xs[i] = float64(n)
	}
	sweep := len(levels) > 1
	switch {
	case len(waiting) == 0:
	case sweep:
		add(lines("p99 lock wait against contention", "workers (contenders)", "ms (log scale)", xs, perStrategy(waiting, wait), true, fifoBound(l, levels)))
	default:
		add(bars("p99 lock wait", "ms", waiting, perLevel(waiting, wait), nil, math.NaN()))
	}
	if len(locks) > 0 {
		add(bars("Accepted spends per second, the locks", "spends/s", locks, perLevel(locks, rate), nil, ceiling(l, locks)))
	}
	if len(unlocked) > 0 {
		add(bars("Accepted spends per second without a lock (own scale)", "spends/s", labels, perLevel(unlocked, rate), grey, math.NaN()))
	}
	if sweep {
		add(lines("Efficiency against contention", "workers (contenders)", "% of the serial ceiling", xs, perStrategy(locks, efficiency), false, series{}))
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ceiling is the serial ceiling the locks' rates are read against, where
// one applies: every row of those strategies has one (none is n/a), and
// they lie within 10% of each other, so that one line stands for all.
// NaN otherwise.
func ceiling(l load, strategies []string) float64 {
	lo, hi := math.Inf(1), 0.0
	for _, r := range l.Rows {
		if !slices.Contains(strategies, r.Strategy) {
			continue
		}
		if r.Ceiling <= 0 || r.CeilingNA != "" {
			return math.NaN()
		}
		lo, hi = min(lo, r.Ceiling), max(hi, r.Ceiling)
	}
	if hi == 0 || hi > 1.1*lo {
		return math.NaN()
	}
	return hi
}

// fifoBound is the fair-queue bound at each level: what a queue that
// serves waiters in turn would make the last of them wait. The strategies'
// bounds differ only by their round trips; the line is the fair lock's
// where it ran, else the smallest.
func fifoBound(l load, levels []int) series {
	b := series{name: "fair-queue bound"}
	found := false
	for _, n := range levels {
		v := math.NaN()
		if r, ok := l.row("fair", n); ok && r.FIFOBound != nil {
			v = *r.FIFOBound
		} else {
			for _, r := range l.Rows {
				if r.Workers == n && r.FIFOBound != nil && r.LockWait != nil && (math.IsNaN(v) || *r.FIFOBound < v) {
					v = *r.FIFOBound
				}
			}
		}
		found = found || !math.IsNaN(v)
		b.values = append(b.values, v)
	}
	if !found {
		return series{}
	}
	return b
}

// waitP99 is the row's p99 wait: for a lock, from the load test's report;
// beyond the work, from the root's step 6's. NaN when it gives neither.
func waitP99(r loadRow) float64 {
	switch {
	case r.LockWait != nil:
		return r.LockWait.P99
	case r.WaitP99 != nil:
		return *r.WaitP99
	}
	return math.NaN()
}

// value is v if the figure exists, else NaN: no bar, no point.
func value(ok bool, v float64) float64 {
	if !ok {
		return math.NaN()
	}
	return v
}

// FormatMS writes a duration (the load test's table and the pages) in milliseconds with three significant digits or
// so: 0.123ms, 4.56ms, 78.9ms, 1.23s.
func FormatMS(v float64) string {
	switch {
	case v < 1:
		return fmt.Sprintf("%.3fms", v)
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 1000:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.2fs", v/1000)
	}
}

// Spread says where the spends go: "from 16 wallets", or with -hot "from
// one wallet (-hot: the other 15 of the 16 stay idle)".
func Spread(wallets int, hot bool) string {
	switch {
	case hot && wallets > 1:
		return fmt.Sprintf("from one wallet (-hot: the other %d of the %d stay idle)", wallets-1, wallets)
	case hot:
		return "from one wallet (-hot)"
	}
	return fmt.Sprintf("from %d %s", wallets, Plural(wallets, "wallet"))
}

func percent(v float64, known bool) string {
	if !known {
		return "n/a"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

// Plural is word, with an s unless n is 1: "1 wallet", "3 wallets"; or,
// given, the plural of words whose plural is not one s more ("phase is",
// "phases are").
func Plural(n int, word string, plural ...string) string {
	switch {
	case n == 1:
		return word
	case len(plural) > 0:
		return plural[0]
	}
	return word + "s"
}

// Broken is a table's BROKEN verdict: "BROKEN: 3 wallets off by 1,230",
// the load test's text and its page alike.
func Broken(walletsOff int, moneyOff int64) string {
	return fmt.Sprintf("BROKEN: %d %s off by %s", walletsOff, Plural(walletsOff, "wallet"), Thousands(moneyOff))
}

// Thousands writes n with its thousands apart: 1234567 as "1,234,567".
func Thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
