package redislockx

// What a retry strategy costs a burst of spenders that all want one lock,
// for step 4 (Compare): the lock attempts they made, how long each waited,
// the Redis commands they caused and why spends failed. It prints one
// strategy's check line and the table that compares the strategies, and
// gives the figures -json prints.
//
//	run := redislockx.Start(ctx, rdb, "jitter", "lock.Jitter{5ms, 15ms}")
//	tally := wallet.Hammer(n, func(int) (bool, error) {
//		... run.Obtained(retry.Busy(), waited, err) ...
//	})
//	run.Stop(ctx, tally)
//	balance, err := run.ReadBack(ctx, rdb, balanceKey)

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"

	"example.com/walletlock/lab/internal/harness"
	"example.com/walletlock/lab/internal/services"
	"example.com/walletlock/lab/lock"
	"example.com/walletlock/lab/wallet"
	"example.com/walletlock/lab/wallet/history"
)

// Note says where the command counts come from, beside the table and in
// the JSON.
const Note = "Redis commands come from INFO commandstats, script internals included; they are server-wide, so other clients of this Redis inflate them."

// Run is what one strategy's burst measured. Obtained and ReleaseFailed
// may be called from many goroutines; read the fields only after Stop.
type Run struct {
	Strategy, Retry string
	wallet.Verdict  // set by the caller once the balance is read back
	Tally           wallet.Tally
	Wall            time.Duration
	Cut             bool                     // ctx ended while the spenders ran (Ctrl-C)
	Attempts        int                      // lock attempts, all spenders together
	Waits           []time.Duration          // per obtained lock: from calling Obtain to holding it
	Commands        int64                    // Redis commands while it ran, -1 if unknown
	Released        []error                  // releases that failed after a spend
	History         *history.Recorder        // every spend, as Burst recorded it
	Linearizable    *harness.Linearizability // its verdict, set with Verdict

	mu     sync.Mutex
	start  time.Time
	before services.CommandStats // nil when INFO failed: no command count
}

// Start reads Redis's command counts and starts the clock.
func Start(ctx context.Context, rdb redis.UniversalClient, strategy, retry string) *Run {
	r := &Run{Strategy: strategy, Retry: retry, Commands: -1}
	r.before, _ = services.ReadCommandStats(ctx, rdb)
	r.start = time.Now()
	return r
}

// Obtained records one Obtain that found the lock held busy times and
// waited for waited; err is what it returned. An Obtain that returned the
// lock made busy+1 attempts.
func (r *Run) Obtained(busy int, waited time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Attempts += busy
	if err == nil {
		r.Attempts++
		r.Waits = append(r.Waits, waited)
	}
}

// ReleaseFailed records a release that failed after its spend.
func (r *Run) ReleaseFailed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Released = append(r.Released, err)
}

// Stop stops the clock and keeps what the spenders reported; Cut says
// whether ctx ended meanwhile.
func (r *Run) Stop(ctx context.Context, t wallet.Tally) {
	r.Wall = time.Since(r.start)
	r.Tally, r.Cut = t, ctx.Err() != nil
}

// ReadBack counts the commands the spenders caused (quietly none when INFO
// fails) and reads the balance at key.
func (r *Run) ReadBack(ctx context.Context, rdb redis.UniversalClient, key string) (int64, error) {
	if after, err := services.ReadCommandStats(ctx, rdb); err == nil && r.before != nil {
		r.Commands = after.Since(r.before)
	}
	return wallet.Balance(ctx, rdb, key)
}

// Errors returns the spends' errors, then the failed releases.
func (r *Run) Errors() []error { return slices.Concat(r.Tally.Errors, r.Released) }

// PrintCheck prints the strategy's check line and, when some spends had
// an unknown outcome, how many of them the balance says landed.
func (r *Run) PrintCheck(w io.Writer) {
	fmt.Fprintf(w, "%-12s %s\n", r.Strategy+":", harness.CheckLine(r.Verdict, r.Linearizable))
	if r.Unknown > 0 && r.Landed >= 0 {
		fmt.Fprintf(w, "%-12s %d of the %d spends with an unknown outcome landed\n", "", r.Landed, r.Unknown)
	}
}

// Problem says in one line how many spends and releases failed, and why,
// or returns nil when none did.
func (r *Run) Problem() error {
	errs := r.Errors()
	if len(errs) == 0 {
		return nil
	}
	kinds := r.errorKinds()
	var why []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		why = append(why, fmt.Sprintf("%d %s", kinds[k], k))
	}
	return fmt.Errorf("%s: %d errors (%s), first: %s", r.Strategy, len(errs), strings.Join(why, ", "), harness.OneLine(errs[0]))
}

func (r *Run) errorKinds() map[string]int {
	kinds := map[string]int{}
	for _, err := range r.Errors() {
		kinds[ErrorKind(err)]++
	}
	return kinds
}

// ErrWatchdog marks a spend that the watchdog cancelled: a refresh found
// the lease gone, or failed.
var ErrWatchdog = errors.New("cancelled by the watchdog: lease lost")

// ErrorKind names why a spend failed. The order matters: a write whose
// reply never came is an unknown outcome whatever cut it short; a spend
// the watchdog cancelled also matches context errors; redislock joins
// ErrNotObtained with ctx.Err() when the wait ran out, so the context is
// tested before ErrNotObtained. "interrupted" is Ctrl-C.
func ErrorKind(err error) string {
	switch {
	case errors.Is(err, wallet.ErrUnknownOutcome):
		return "unknown outcome"
	case errors.Is(err, ErrWatchdog):
		return "cancelled by the watchdog (lease lost)"
	case errors.Is(err, lock.ErrNotHeld), errors.Is(err, redislock.ErrLockNotHeld):
		return "lease lost"
	case errors.Is(err, lock.ErrUnknown): // a release or refresh whose reply was lost
		return "lock outcome unknown"
	case errors.Is(err, context.DeadlineExceeded):
		return "gave up waiting"
	case errors.Is(err, context.Canceled):
		return "interrupted"
	case errors.Is(err, redislock.ErrNotObtained):
		return "retries exhausted"
	}
	return "redis error"
}

// perSpend divides by the accepted spends; NaN when there were none.
func (r *Run) perSpend(total float64) float64 {
	if r.Accepted == 0 || total < 0 {
		return math.NaN()
	}
	return total / float64(r.Accepted)
}

// Percentile returns the p-th (0 to 1) of the waits by nearest rank (with
// 50 samples, p99 is the slowest one), 0 when there are none.
func (r *Run) Percentile(p float64) time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	w := slices.Sorted(slices.Values(r.Waits))
	i := int(math.Ceil(p*float64(len(w)))) - 1
	return w[max(i, 0)]
}

// Table prints header, Note and one row per run.
func Table(w io.Writer, header string, runs []*Run) {
	fmt.Fprintf(w, "\n%s\n%s\n\n", header, Note)
	width := len("retry")
	for _, r := range runs {
		width = max(width, len(r.Retry))
	}
	row := "%-12s %-*s %9s %15s %9s %9s %15s %7s\n"
	fmt.Fprintf(w, row, "strategy", width, "retry", "wall", "attempts/spend", "wait p50", "wait p99", "commands/spend", "errors")
	for _, r := range runs {
		fmt.Fprintf(w, row, r.Strategy, width, r.Retry, ms(r.Wall),
			num(r.perSpend(float64(r.Attempts))), ms(r.Percentile(0.50)), ms(r.Percentile(0.99)),
			num(r.perSpend(float64(r.Commands))), strconv.Itoa(len(r.Errors())))
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond)) }

func num(f float64) string {
	if math.IsNaN(f) {
		return "-"
	}
	return fmt.Sprintf("%.1f", f)
}

// Figures is one strategy in the -json output. Per-spend numbers are null
// when no spend was accepted.
type Figures struct {
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
	Errors           map[string]int `json:"errors"`  // failed spends and releases, by ErrorKind
	Unknown          int            `json:"unknown"` // spends whose outcome is unknown
	Landed           int            `json:"landed"`  // how many of them the balance says landed; -1 if none fits
	Cut              bool           `json:"interrupted"`
}

// Figures returns the run's figures for -json.
func (r *Run) Figures() Figures {
	return Figures{
		Strategy: r.Strategy, Retry: r.Retry, Check: r.Verdict.String(), OK: r.OK,
		Accepted: r.Accepted, Balance: r.Balance, Expected: r.Expected,
		WallMS: msf(r.Wall), Attempts: r.Attempts, AttemptsPerSpend: orNull(r.perSpend(float64(r.Attempts))),
		WaitP50MS: msf(r.Percentile(0.50)), WaitP99MS: msf(r.Percentile(0.99)),
		Commands: r.Commands, CommandsPerSpend: orNull(r.perSpend(float64(r.Commands))),
		Failed: len(r.Tally.Errors), Errors: r.errorKinds(),
		Unknown: r.Unknown, Landed: r.Landed, Cut: r.Cut,
	}
}

// msf is d in milliseconds, to two decimals.
func msf(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

func orNull(f float64) *float64 {
	if math.IsNaN(f) {
		return nil
	}
	return &f
}
