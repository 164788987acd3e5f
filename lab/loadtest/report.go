package loadtest

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"example.com/walletlock/lab/internal/charts"
	"example.com/walletlock/lab/internal/history"
	"example.com/walletlock/wallet"
)

// Report is everything a run measured. Its JSON form is what workshop
// groups compare between machines; the program that runs it judges each
// row against the lesson (see Row.Sum).
type Report struct {
	Started      string     `json:"started"` // RFC 3339, UTC
	Seconds      float64    `json:"seconds"` // the whole run
	Params       Params     `json:"params"`
	System       System     `json:"system"`
	Pools        Pools      `json:"pools"`
	RedisRTT     *RTT       `json:"redis_round_trip,omitempty"` // nil: Redis not used
	PostgresRTT  *RTT       `json:"postgres_round_trip,omitempty"`
	WorkTime     *RTT       `json:"work_time,omitempty"` // how long -work really took here; nil: not timed (see measureWork)
	Parallel     int        `json:"parallel"`            // critical sections that can run at once, at the most workers
	Rows         []Row      `json:"strategies"`          // one per strategy and worker count
	Interrupted  bool       `json:"interrupted"`         // ctx ended (Ctrl-C): the last row is partial
	NotRun       []string   `json:"not_run,omitempty"`   // strategies (in a sweep "fair at 50 workers") an interruption or error left out
	PeakRSSBytes int64      `json:"peak_rss_bytes"`      // max resident set size of the process so far; 0 if unknown
	Leftovers    *Leftovers `json:"leftovers,omitempty"` // what the run could not delete; nil: nothing

	histories []history.Section // each row's, for WriteHistory (Config.History = HistoryPage)
}

// Params are the settings of the run, as the flags give them.
type Params struct {
	Strategies []string `json:"strategies"`
	Wallets    int      `json:"wallets"`
	Workers    int      `json:"workers"`       // the most workers of any level: the pools are sized to it
	Sweep      []int    `json:"workers_sweep"` // the worker counts each strategy ran at, in order
	Duration   string   `json:"duration"`
	Ops        int64    `json:"ops"`
	Work       string   `json:"work"`
	Amount     int64    `json:"amount"`
	Initial    int64    `json:"initial"`
	Seed       uint64   `json:"seed"`
	Hot        bool     `json:"hot"`
	TTL        string   `json:"ttl"`
	Timeout    string   `json:"timeout"`
	Prefix     string   `json:"prefix"`
	FirstID    int64    `json:"first_id"`
}

// System is what the run ran on.
type System struct {
	Redis    string `json:"redis_version,omitempty"`
	Postgres string `json:"postgres_version,omitempty"`
	Go       string `json:"go_version"`
	OS       string `json:"os"`
	CPUs     int    `json:"cpus"`
}

// Pools are the connection pool sizes Dial chose (see MaxPostgresConns).
type Pools struct {
	Redis    int `json:"redis_pool_size,omitempty"`
	Postgres int `json:"postgres_max_conns,omitempty"`
	// FairReaders is the pool of the fair lock's readers, apart from
	// Redis's: their blocking reads never take a spender's connection.
	FairReaders int    `json:"fair_readers_pool_size,omitempty"`
	Note        string `json:"note"`
}

// Latency is a distribution from an HDR histogram, in milliseconds.
type Latency struct {
	P50 float64 `json:"p50_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
	N   int64   `json:"n"`
}

// Row is one strategy's figures at one worker count.
type Row struct {
	Strategy     string  `json:"strategy"`
	Workers      int     `json:"workers"` // goroutines that spent concurrently
	Interrupted  bool    `json:"interrupted"`
	SetupSeconds float64 `json:"setup_seconds"` // setting up its fresh wallets
	Seconds      float64 `json:"seconds"`       // from the first spend to the end of the last

	Spends       int64   `json:"spends"` // spends that ran to an end, refused or failed ones included
	Accepted     int64   `json:"accepted"`
	PerSecond    float64 `json:"accepted_per_second"`
	Attempts     int64   `json:"attempts"` // lock attempts; versioned tries; one per spend for the others
	RefusedFunds int64   `json:"refused_funds"`
	RefusedStale int64   `json:"refused_stale"` // fenced only: PostgreSQL refused the fence
	Errors       int64   `json:"errors"`        // failed spends, the unknown ones not included
	FirstError   string  `json:"first_error,omitempty"`
	Abandoned    int64   `json:"abandoned"` // lock waits cut short by the end of the run: nothing done

	// Unknown counts spends whose write was sent but whose reply never
	// came (wallet.ErrUnknownOutcome): each may have landed or not, and
	// the check allows for both. UnknownLanded is how many of them the
	// balances say landed; -1 when the balances fit no count (BROKEN).
	Unknown       int64  `json:"unknown"`
	UnknownLanded int64  `json:"unknown_landed"`
	FirstUnknown  string `json:"first_unknown,omitempty"`

	// LockWait is the time to get the lock, less what its calls waited
	// for a connection meanwhile; nil: no lock.
	LockWait *Latency `json:"lock_wait,omitempty"`
	Latency  Latency  `json:"spend_latency"` // one whole spend, waiting included

	// PoolWait is what each spend waited for a connection from the pool,
	// and for its turn at it (see turns); PoolWaitShare is the share of
	// the spends' time it took, and LockWaitShare the share of LockWait
	// (0 without a lock).
	PoolWait      Latency `json:"pool_wait"`
	PoolWaitShare float64 `json:"pool_wait_share"`
	LockWaitShare float64 `json:"lock_wait_share"`
	// PoolLimit names the pool ("redis" or "postgres") when the row spent
	// a third of its time or more waiting for a connection, and more than
	// for the lock: the pool, not the strategy, is what the row measured
	// (-pool changes it). "": the pool is not the limit.
	PoolLimit string `json:"pool_limit"`

	RedisCommands *int64   `json:"redis_commands,omitempty"` // INFO commandstats after minus before; nil: unknown
	RedisPerSpend *float64 `json:"redis_commands_per_accepted_spend,omitempty"`
	// RedisCalls counts the commands this run sent to Redis during the
	// phase: round trips, where RedisCommands also counts what scripts
	// ran inside Redis (and other clients' commands). A subscription's
	// SUBSCRIBEs are not counted. nil: unknown.
	RedisCalls         *int64   `json:"redis_calls,omitempty"`
	RedisCallsPerSpend *float64 `json:"redis_calls_per_accepted_spend,omitempty"`

	RoundTrips RoundTrips `json:"critical_section_round_trips"`
	Ceiling    float64    `json:"ceiling_per_second"` // 0: unknown
	Efficiency float64    `json:"efficiency"`         // accepted_per_second / ceiling_per_second
	// CeilingNotApplicable says why the ceiling, the efficiency and the
	// fair-queue bound do not limit the row, though they are computed as
	// always: "pool" (PoolLimit is set), "spread" (the workers are
	// spread too thin for a queue to form, see Sparse), "": they apply.
	CeilingNotApplicable string `json:"ceiling_not_applicable"`
	// WorkUnderLoad is how long the work took beside this row's spends,
	// in ms (see probeWork; ceiling_per_second charges it as timed before
	// the run). CeilingUnderLoad and EfficiencyUnderLoad are the ceiling
	// and the efficiency with it. 0: not timed (no work, or over 20 ms).
	WorkUnderLoad       float64 `json:"work_under_load_ms,omitempty"`
	CeilingUnderLoad    float64 `json:"ceiling_under_load_per_second,omitempty"`
	EfficiencyUnderLoad float64 `json:"efficiency_under_load,omitempty"`
	// VsNone is accepted_per_second over none's at the same worker count
	// in this run: what coordinating cost on this machine. 0: unknown (none
	// not run, or it measured nothing).
	VsNone float64 `json:"vs_none"`
	// FIFOBound is the longest a waiter would wait in a fair queue: the
	// contenders for one wallet (see Contenders) times one critical
	// section. Compare lock_wait's p99 with it. 0: unknown.
	FIFOBound float64 `json:"fifo_bound_ms"`

	Check string `json:"check"` // Sum's line; "": balances not read back
	OK    bool   `json:"ok"`
	// Sum is the check summed over the wallets, OK only when every wallet
	// is: what a program holds to the lesson.
	Sum        wallet.Verdict `json:"-"`
	WalletsOff int            `json:"wallets_off"`
	MoneyOff   int64          `json:"money_off"` // the sum of |balance - expected| over the wallets that are off

	// Measured is false when the row says nothing about the strategy: it
	// accepted no spend, more than 5% of its spends failed or got no
	// reply, or its balances could not be read back. Note says which.
	Measured bool   `json:"measured"`
	Note     string `json:"note,omitempty"`

	// Linearizable is the history's verdict (see history.go): "yes",
	// "no", or "unknown" when the check did not finish within its limits
	// or the log dropped spends. Why says which wallet, or what stopped
	// the check.
	Linearizable        string  `json:"linearizable"`
	LinearizableWhy     string  `json:"linearizable_why,omitempty"`
	HistoryOps          int     `json:"history_ops"`     // spends recorded
	HistoryDropped      int     `json:"history_dropped"` // spends the log had no room for (then "unknown")
	HistoryCheckSeconds float64 `json:"history_check_seconds"`
}

// Verdict is the table's last column: "OK", "BROKEN: 3 wallets off by
// 1,230", or "NO DATA: no spend accepted" when the row measured nothing
// (a BROKEN balance is reported all the same).
func (r Row) Verdict() string {
	var v string
	switch {
	case r.Check != "" && !r.OK:
		v = charts.Broken(r.WalletsOff, r.MoneyOff)
	case !r.Measured:
		v = "NO DATA: " + r.Note
	default:
		v = "OK"
	}
	if r.Interrupted {
		v += " (interrupted)"
	}
	return v
}

// Unmeasured returns the rows that measured nothing, each with the reason:
// "lock (no spend accepted)".
func (rep *Report) Unmeasured() []string {
	var out []string
	for _, r := range rep.Rows {
		if !r.Measured {
			out = append(out, fmt.Sprintf("%s (%s)", rep.label(r), r.Note))
		}
	}
	return out
}

// sweep reports whether the run went through more than one worker count.
func (rep *Report) sweep() bool { return len(rep.Params.Sweep) > 1 }

// label names a row: its strategy, and in a sweep its workers too.
func (rep *Report) label(r Row) string {
	return step{r.Strategy, r.Workers}.label(Config{Sweep: rep.Params.Sweep})
}

// compare fills in each row's VsNone from the none row of its worker
// count.
func (rep *Report) compare() {
	none := map[int]float64{}
	for _, r := range rep.Rows {
		if r.Strategy == "none" && r.Measured {
			none[r.Workers] = r.PerSecond
		}
	}
	for i, r := range rep.Rows {
		if n := none[r.Workers]; n > 0 {
			rep.Rows[i].VsNone = r.PerSecond / n
		}
	}
}

// WriteTable writes the report for a reader: the parameters, one row per
// strategy and worker count, the ceiling and the fair-queue bound, the
// check lines and what the run ran on.
func (rep *Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	b.WriteString(rep.intro() + "\n\n")

	// In a sweep every table starts with the worker count.
	workers := func(r Row) string { return "" }
	workersHead := ""
	if rep.sweep() {
		workers = func(r Row) string { return fmt.Sprintf("%d\t", r.Workers) }
		workersHead = "workers\t"
	}

	// Where the pool is the limit, the wait for a connection gets columns
	// of its own beside the lock wait.
	poolHead, pool := "", func(Row) string { return "" }
	if rep.poolLimited() {
		poolHead = "pool p50\tpool p99\t"
		pool = func(r Row) string {
			return charts.FormatMS(r.PoolWait.P50) + "\t" + charts.FormatMS(r.PoolWait.P99) + "\t"
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s%-9s\taccepted/s\tattempts\tno funds\tstale\terrors\tunknown\twait p50\twait p99\t%sspend p50\tspend p99\tspend max\tredis/spend\tcalls/spend\t  verdict\n", workersHead, "strategy", poolHead)
	for _, r := range rep.Rows {
		wait50, wait99 := "n/a", "n/a"
		if r.LockWait != nil {
			wait50, wait99 = charts.FormatMS(r.LockWait.P50), charts.FormatMS(r.LockWait.P99)
		}
		fmt.Fprintf(tw, "%s%-9s\t%.0f\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s%s\t%s\t%s\t%s\t%s\t  %s\n",
			workers(r), r.Strategy, r.PerSecond, r.Attempts, r.RefusedFunds, r.RefusedStale, r.Errors, r.Unknown,
			wait50, wait99, pool(r), charts.FormatMS(r.Latency.P50), charts.FormatMS(r.Latency.P99), charts.FormatMS(r.Latency.Max),
			fmtPer(r.RedisPerSpend), fmtPer(r.RedisCallsPerSpend), r.Verdict())
	}
	tw.Flush()
	b.WriteString(rep.PoolLine())

	b.WriteString("\n" + rep.ceilingIntro())
	tw = tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%s%-9s\t%-22s\tceiling/s\tachieved/s\tefficiency\tvs none\twait p99\tfair-queue bound\twait/bound\t\n", workersHead, "strategy", "round trips")
	for _, r := range rep.Rows {
		ceiling := fmt.Sprintf("%.0f", r.Ceiling)
		eff, vsNone, wait99, bound, ratio := "n/a", "n/a", "n/a", "n/a", "n/a"
		if r.Ceiling > 0 {
			eff = fmt.Sprintf("%.0f%%", 100*r.Efficiency)
		}
		if r.VsNone > 0 {
			vsNone = fmt.Sprintf("%.2fx", r.VsNone)
		}
		if r.LockWait != nil {
			wait99 = charts.FormatMS(r.LockWait.P99)
		}
		if r.FIFOBound > 0 {
			bound = charts.FormatMS(r.FIFOBound)
			if r.LockWait != nil {
				ratio = fmt.Sprintf("%.1fx", r.LockWait.P99/r.FIFOBound)
			}
		}
		if why := r.CeilingNotApplicable; why != "" {
			ceiling, eff, ratio = "n/a ("+why+")", "n/a ("+why+")", "n/a ("+why+")"
		}
		fmt.Fprintf(tw, "%s%-9s\t%-22s\t%s\t%.0f\t%s\t%s\t%s\t%s\t%s\t\n",
			workers(r), r.Strategy, r.RoundTrips, ceiling, r.PerSecond, eff, vsNone, wait99, bound, ratio)
	}
	tw.Flush()
	b.WriteString(rep.ceilingNotes())

	b.WriteString("\n")
	level := -1
	for _, r := range rep.Rows {
		indent := ""
		if rep.sweep() {
			if r.Workers != level {
				level = r.Workers
				fmt.Fprintf(&b, "%d workers:\n", level)
			}
			indent = "  "
		}
		check := r.Check
		if check == "" {
			check = r.Note
		}
		if r.Check != "" && r.Linearizable != "" {
			check += " linearizable=" + r.Linearizable
		}
		fmt.Fprintf(&b, "%s%-11s %s\n", indent, r.Strategy+":", check)
	}
	for _, r := range rep.Rows {
		label := rep.label(r)
		if r.Errors > 0 {
			fmt.Fprintf(&b, "%s: %d %s, the first: %s\n", label, r.Errors, charts.Plural(int(r.Errors), "error"), r.FirstError)
		}
		if r.Unknown > 0 {
			landed := fmt.Sprintf("%d of them landed", r.UnknownLanded)
			switch {
			case r.Check == "":
				landed = "how many landed is not known"
			case r.UnknownLanded < 0:
				landed = "the balances fit no count of them"
			}
			fmt.Fprintf(&b, "%s: %d %s with no answer, sent or cancelled while waiting for a connection (unknown outcome), %s; the first: %s\n",
				label, r.Unknown, charts.Plural(int(r.Unknown), "write"), landed, r.FirstUnknown)
		}
		if r.Strategy == "none" && r.OK {
			fmt.Fprintf(&b, "%s: no update was lost this time; with more contention (try -hot) it is BROKEN\n", label)
		}
	}
	if rep.Params.Ops > 0 && len(rep.Rows) > 0 {
		b.WriteString(rep.opsLine())
	}
	if rep.Interrupted && len(rep.Rows) == 0 {
		b.WriteString("interrupted before the first strategy ran\n")
	} else if rep.Interrupted {
		fmt.Fprintf(&b, "interrupted: the last row is partial")
		if len(rep.NotRun) > 0 {
			fmt.Fprintf(&b, "; not run: %s", strings.Join(rep.NotRun, ", "))
		}
		b.WriteString("\n")
	}

	b.WriteString("\n" + rep.footer())
	_, err := io.WriteString(w, b.String())
	return err
}

// intro is the first line: the workload.
func (rep *Report) intro() string {
	p := rep.Params
	per := " per strategy"
	who := fmt.Sprintf("%d workers", p.Workers)
	if rep.sweep() {
		per = " per strategy and worker count"
		counts := make([]string, len(p.Sweep))
		for i, n := range p.Sweep {
			counts[i] = fmt.Sprint(n)
		}
		who = fmt.Sprintf("%s and %s workers in turn", strings.Join(counts[:len(counts)-1], ", "), counts[len(counts)-1])
	}
	target := p.Duration + per
	if p.Ops > 0 {
		target = fmt.Sprintf("%d spends or %s%s, whichever comes first", p.Ops, p.Duration, per)
	}
	return fmt.Sprintf("%s spending %d %s, %s of work, %s", who, p.Amount, charts.Spread(p.Wallets, p.Hot), p.Work, target)
}

// opsLine says how long each strategy took for its -ops spends, and
// which ones -duration ended first.
func (rep *Report) opsLine() string {
	var took []string
	for _, r := range rep.Rows {
		s := fmt.Sprintf("%s %.2fs", rep.label(r), r.Seconds)
		if r.Spends < rep.Params.Ops && !r.Interrupted {
			s += fmt.Sprintf(" (only %d: -duration ended it)", r.Spends)
		}
		took = append(took, s)
	}
	return fmt.Sprintf("Time for %d spends (-ops): %s.\n", rep.Params.Ops, strings.Join(took, ", "))
}

// ceilingIntro explains the ceiling table with this run's numbers.
func (rep *Report) ceilingIntro() string {
	var rtts []string
	if rep.RedisRTT != nil {
		rtts = append(rtts, fmt.Sprintf("Redis %s", charts.FormatMS(rep.RedisRTT.P50)))
	}
	if rep.PostgresRTT != nil {
		rtts = append(rtts, fmt.Sprintf("PostgreSQL %s", charts.FormatMS(rep.PostgresRTT.P50)))
	}
	at := fmt.Sprintf("%d %s at once", rep.Parallel, charts.Plural(rep.Parallel, "critical section"))
	for _, n := range rep.Params.Sweep {
		if Parallel(rep.Params.Wallets, n, rep.Params.Hot) != rep.Parallel {
			at = "one critical section at once per wallet that has a worker"
		}
	}
	timed := ""
	if rep.WorkTime != nil {
		timed = fmt.Sprintf(" (%s as timed here: timers fire late)", charts.FormatMS(rep.WorkTime.P50))
	}
	return fmt.Sprintf("Ceiling: %s, each %s of work%s plus its round trips (%s, median of %d).\n",
		at, rep.Params.Work, timed, strings.Join(rtts, ", "), pings)
}

// ceilingNotes explains what the ceiling table cannot show by itself.
func (rep *Report) ceilingNotes() string {
	var b strings.Builder
	has := func(name string) bool {
		return slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.Strategy == name })
	}
	if has("none") {
		b.WriteString("none holds no lock: it is measured against the same serial ceiling, but its\nspends of one wallet overlap (past 100% if enough do), each losing another's update.\n")
		b.WriteString("vs none is each rate over none's with as many workers in this run: none coordinates\nnothing, so it is the most this machine gave these workers, ceiling or not.\n")
	}
	if has("atomic") {
		b.WriteString("atomic holds nothing while it works: it works first, then checks and takes in one\nscript, so no spend waits for another's work and no serial ceiling applies.\n")
	}
	notApplicable := func(why string) bool {
		return slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.CeilingNotApplicable == why })
	}
	if notApplicable("pool") {
		b.WriteString("n/a (pool): the row spent more of its time waiting for a connection than for anything\nelse (see the line under the first table): no ceiling of the strategy limited it.\n")
	}
	if notApplicable("spread") {
		fmt.Fprintf(&b, "n/a (spread): %d workers on %d wallets seldom want one wallet at once, so no queue\nforms: neither the serial ceiling nor the fair-queue bound limits the rate or the wait.\n",
			rep.Params.Workers, rep.Params.Wallets)
	}
	if slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.FIFOBound > 0 }) {
		b.WriteString("fair-queue bound: the longest wait in a queue served in turn, contenders x (work +\n")
		if rep.Params.Hot || rep.Params.Wallets == 1 {
			b.WriteString("round trips), where the contenders are all the workers, on the one wallet.\n")
		} else {
			b.WriteString("round trips), with the workers per wallet, rounded up, as contenders: wallets are\npicked at random, so some queues are longer at times, and the bound is a yardstick.\n")
		}
	}
	return b.String()
}

// poolLimited reports whether a row was limited by its pool.
func (rep *Report) poolLimited() bool {
	return slices.ContainsFunc(rep.Rows, func(r Row) bool { return r.PoolLimit != "" })
}

// PoolLine is the line under the first table that says which rows the
// pool, not the strategy, limited, and the flag that changes it; "" when
// it limited none.
func (rep *Report) PoolLine() string {
	var parts []string
	lockShare := -1.0
	for _, pool := range []string{"redis", "postgres"} {
		var names, shares []string
		for _, r := range rep.Rows {
			if r.PoolLimit != pool {
				continue
			}
			names = append(names, rep.label(r))
			shares = append(shares, fmt.Sprintf("%.0f%%", 100*r.PoolWaitShare))
			if r.LockWait != nil {
				lockShare = max(lockShare, r.LockWaitShare)
			}
		}
		if len(names) == 0 {
			continue
		}
		size, service, most := rep.Pools.Redis, "Redis", MaxPool
		if pool == "postgres" {
			size, service, most = rep.Pools.Postgres, "PostgreSQL", MaxPostgresConns
		}
		raise := fmt.Sprintf("-pool raises it, up to %d", most)
		if size >= most {
			raise = fmt.Sprintf("%d is the most -pool gives it", most)
		}
		parts = append(parts, fmt.Sprintf("%s spent %s of %s time waiting for one of the %d %s connections (%s)",
			strings.Join(names, ", "), strings.Join(shares, ", "), map[bool]string{true: "its", false: "their"}[len(names) == 1], size, service, raise))
	}
	if len(parts) == 0 {
		return ""
	}
	line := "The pool, not the lock, is the limit: " + strings.Join(parts, "; ")
	if lockShare >= 0 {
		line += fmt.Sprintf(", and at most %.0f%% waiting for a lock", 100*lockShare)
	}
	return line + ".\n"
}

// fmtPer writes a count per spend, n/a when unknown.
func fmtPer(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", *v)
}

// footer says what the run ran on.
func (rep *Report) footer() string {
	var parts []string
	if rep.System.Redis != "" {
		pool := fmt.Sprintf("pool %d", rep.Pools.Redis)
		if rep.Pools.FairReaders > 0 {
			pool += fmt.Sprintf(", and %d for fair's readers", rep.Pools.FairReaders)
		}
		parts = append(parts, fmt.Sprintf("Redis %s (%s)", rep.System.Redis, pool))
	}
	if rep.System.Postgres != "" {
		pool := fmt.Sprintf("pool %d", rep.Pools.Postgres)
		if rep.Pools.Postgres < rep.Params.Workers {
			pool += fmt.Sprintf(", capped below the %d workers", rep.Params.Workers)
		}
		parts = append(parts, fmt.Sprintf("PostgreSQL %s (%s)", rep.System.Postgres, pool))
	}
	parts = append(parts, fmt.Sprintf("%s, %s, %d CPUs", rep.System.Go, rep.System.OS, rep.System.CPUs))
	s := "Ran on " + strings.Join(parts, ", ") + ".\n"
	if rep.PeakRSSBytes > 0 {
		s += fmt.Sprintf("Peak memory (max RSS): %.0f MiB. Whole run: %.1fs.\n", float64(rep.PeakRSSBytes)/(1<<20), rep.Seconds)
	}
	if rep.RedisRTT != nil {
		s += "redis/spend counts every command Redis ran (INFO commandstats), other clients' too.\n"
		s += "calls/spend counts the commands this run sent to Redis: a script is one, however many it runs.\n"
	}
	return s
}

// String writes the round trips as "1 Redis + 2 PostgreSQL".
func (t RoundTrips) String() string {
	var parts []string
	if t.Redis > 0 {
		parts = append(parts, fmt.Sprintf("%d Redis", t.Redis))
	}
	if t.Postgres > 0 {
		parts = append(parts, fmt.Sprintf("%d PostgreSQL", t.Postgres))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, " + ")
}
