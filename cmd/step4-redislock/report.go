package main

// The measuring and printing side of step 4: the results of one strategy,
// Redis's own command counts, and the table or JSON they end up in.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bsm/redislock"

	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/internal/services"
	"example.com/walletlock/lock"
	"example.com/walletlock/wallet"
)

// config is what the flags set.
type config struct {
	n               int
	work, ttl, wait time.Duration
	prefix          string
}

// pick returns the strategies -strategy names.
func pick(name string) ([]strategy, error) {
	if name == "all" {
		return strategies, nil
	}
	for _, s := range strategies {
		if s.name == name {
			return []strategy{s}, nil
		}
	}
	return nil, fmt.Errorf("unknown -strategy %q (want lockstep, exponential, jitter or all)", name)
}

// result is what one strategy's run measured.
type result struct {
	Strategy, Retry string
	wallet.Verdict
	wall     time.Duration
	attempts int             // lock attempts, all spenders together
	waits    []time.Duration // per obtained lock: from calling Obtain to holding it
	commands int64           // Redis commands during the run, -1 if unknown
	failed   int             // spends that returned an error
	errs     []error         // their errors, and failed releases
	cut      bool            // Ctrl-C ended the run of this strategy
	ran      bool            // the spenders ran

	before   services.CommandStats // INFO commandstats before the spenders; nil if unknown
	tally    wallet.Tally          // what the spenders reported
	released []error               // releases that failed after a spend
}

// printCheck prints the strategy's check line and, when some spends had an
// unknown outcome, how many of them the balance says landed.
func printCheck(w io.Writer, r result) {
	fmt.Fprintf(w, "%-12s %s\n", r.Strategy+":", r.Verdict)
	if r.Unknown > 0 && r.Landed >= 0 {
		fmt.Fprintf(w, "%-12s %d of the %d spends with an unknown outcome landed\n", "", r.Landed, r.Unknown)
	}
}

// oneLine folds an error's message onto one line: each report is one line.
func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

// perSpend divides by the accepted spends; NaN when there were none.
func (r result) perSpend(total float64) float64 {
	if r.Accepted == 0 || total < 0 {
		return math.NaN()
	}
	return total / float64(r.Accepted)
}

// percentile returns the p-th (0 to 1) of the waits by nearest rank (with
// 50 samples, p99 is the slowest one). A plain sort is enough here.
func (r result) percentile(p float64) time.Duration {
	if len(r.waits) == 0 {
		return 0
	}
	w := slices.Sorted(slices.Values(r.waits))
	i := int(math.Ceil(p*float64(len(w)))) - 1
	return w[max(i, 0)]
}

// errWatchdog marks a spend that the watchdog cancelled: a refresh found
// the lease gone, or failed.
var errWatchdog = errors.New("cancelled by the watchdog: lease lost")

// errorKind names why a spend failed. The order matters: a write whose
// reply never came is an unknown outcome whatever cut it short; a spend
// the watchdog cancelled also matches context errors; redislock joins
// ErrNotObtained with ctx.Err() when the wait ran out, so the context is
// tested before ErrNotObtained. "interrupted" is Ctrl-C.
func errorKind(err error) string {
	switch {
	case errors.Is(err, wallet.ErrUnknownOutcome):
		return "unknown outcome"
	case errors.Is(err, errWatchdog):
		return "cancelled by the watchdog (lease lost)"
	case errors.Is(err, lock.ErrNotHeld), errors.Is(err, redislock.ErrLockNotHeld):
		return "lease lost"
	case errors.Is(err, context.DeadlineExceeded):
		return "gave up waiting"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, redislock.ErrNotObtained):
		return "retries exhausted"
	}
	return "redis error"
}

// reportErrors says on stderr how many spends failed, and why.
func reportErrors(stderr io.Writer, r result) {
	if len(r.errs) == 0 {
		return
	}
	kinds := map[string]int{}
	for _, err := range r.errs {
		kinds[errorKind(err)]++
	}
	var why []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		why = append(why, fmt.Sprintf("%d %s", kinds[k], k))
	}
	fmt.Fprintf(stderr, "step4-redislock: %s: %d errors (%s), first: %s\n",
		r.Strategy, len(r.errs), strings.Join(why, ", "), oneLine(r.errs[0]))
}

const commandsNote = "Redis commands come from INFO commandstats, script internals included; they are server-wide, so other clients of this Redis inflate them."

func writeTable(w io.Writer, c config, results []result) {
	fmt.Fprintf(w, "\n%d spenders, %d each from %d, work %v, ttl %v, wait at most %v.\n%s\n\n",
		c.n, amount, initial, c.work, c.ttl, c.wait, commandsNote)
	width := len("retry")
	for _, r := range results {
		width = max(width, len(r.Retry))
	}
	row := "%-12s %-*s %9s %15s %9s %9s %15s %7s\n"
	fmt.Fprintf(w, row, "strategy", width, "retry", "wall", "attempts/spend", "wait p50", "wait p99", "commands/spend", "errors")
	for _, r := range results {
		fmt.Fprintf(w, row, r.Strategy, width, r.Retry, ms(r.wall),
			num(r.perSpend(float64(r.attempts))), ms(r.percentile(0.50)), ms(r.percentile(0.99)),
			num(r.perSpend(float64(r.commands))), strconv.Itoa(len(r.errs)))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func num(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.1f", f)
}

// jsonResult is one strategy in the -json output. Per-spend numbers are
// null when no spend was accepted.
type jsonResult struct {
	Strategy         string         `json:"strategy"`
	Retry            string         `json:"retry"`
	Check            string         `json:"check"`
	OK               bool           `json:"ok"`
	Accepted         int            `json:"accepted"`
	Balance          int64          `json:"balance"`
	Expected         int64          `json:"expected"`
	WallMS           float64        `json:"wall_ms"`
	Attempts         int            `json:"attempts"`
	AttemptsPerSpend *float64       `json:"attempts_per_spend"`
	WaitP50MS        float64        `json:"wait_p50_ms"`
	WaitP99MS        float64        `json:"wait_p99_ms"`
	Commands         int64          `json:"commands"`
	CommandsPerSpend *float64       `json:"commands_per_spend"`
	Failed           int            `json:"failed_spends"`
	Errors           map[string]int `json:"errors"`
	Unknown          int            `json:"unknown"` // spends whose outcome is unknown
	Landed           int            `json:"landed"`  // how many of them the balance says landed; -1 if none fits
	Cut              bool           `json:"interrupted"`
}

// writeJSON prints the strategies that ran. One that Ctrl-C cut short is
// among them, marked interrupted, but not among the phases the lesson
// judges: its lesson result is interrupted_phase.
func writeJSON(w io.Writer, c config, results []result, cut *result, interrupted bool) error {
	out := struct {
		N           int             `json:"n"`
		Work        string          `json:"work"`
		TTL         string          `json:"ttl"`
		Wait        string          `json:"wait"`
		Note        string          `json:"note"`
		Strategies  []jsonResult    `json:"strategies"`
		Phases      []lesson.Result `json:"phases"`
		Prefix      string          `json:"prefix"`
		Interrupted bool            `json:"interrupted"`
		CutShort    *lesson.Result  `json:"interrupted_phase,omitempty"`
	}{c.n, c.work.String(), c.ttl.String(), c.wait.String(), commandsNote, []jsonResult{}, []lesson.Result{}, c.prefix, interrupted, nil}
	for _, r := range appendCut(results, cut) {
		j := jsonResult{
			Strategy: r.Strategy, Retry: r.Retry, Check: r.Verdict.String(), OK: r.OK,
			Accepted: r.Accepted, Balance: r.Balance, Expected: r.Expected,
			WallMS: msf(r.wall), Attempts: r.attempts,
			AttemptsPerSpend: orNull(r.perSpend(float64(r.attempts))),
			WaitP50MS:        msf(r.percentile(0.50)), WaitP99MS: msf(r.percentile(0.99)),
			Commands: r.commands, CommandsPerSpend: orNull(r.perSpend(float64(r.commands))),
			Failed: r.failed, Errors: map[string]int{},
			Unknown: r.Unknown, Landed: r.Landed, Cut: r.cut,
		}
		for _, err := range r.errs {
			j.Errors[errorKind(err)]++
		}
		out.Strategies = append(out.Strategies, j)
		p := lesson.NewResult(step, r.Strategy, j.Check, r.OK)
		if r.cut {
			out.CutShort = &p
			continue
		}
		out.Phases = append(out.Phases, p)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func msf(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

func orNull(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}
