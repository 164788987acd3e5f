package main

// make judge-matrix: every lock the judge knows, every mutant and every
// variant of the article's lock, against every property, written into
// docs/judge.md between its matrix markers.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"example.com/walletlock/lab/internal/env"
	"example.com/walletlock/lab/internal/launch"
	"example.com/walletlock/lab/internal/lockbuild"
	"example.com/walletlock/lab/judge"
	"example.com/walletlock/lab/judge/locks"
	"example.com/walletlock/wallet/postgres"
)

// allChapters judges everything, the slow faults and the guards too.
const allChapters = "lease,watchdog,fencing,faults,guards"

// row is one judged lock of the matrix.
type row struct {
	lock   string // as -lock and LOCK= name it
	mutant *lockbuild.Mutant
	report judge.Report
	err    error
}

// means are the lines the matrix gives each known lock, for someone
// choosing one; the verdicts are added to them.
var means = map[string]string{
	"root":           "The article's lock: learn from it. Its fence keeps the money right through every fault; it lacks the guards production adds (below).",
	"hardened":       "The article's lock with production's guards, its signatures a superset of the article's: the one to use, with AcquireFenced, when the write it protects matters.",
	"fair":           "The hardened lock's leases handed out in turn: for a key that many want at once.",
	"redislock":      "bsm/redislock v0.10.0: no fence and no watchdog: a pause, a restart or a failover loses money unless the database checks each write itself.",
	"redsync":        "Redlock's mutex on go-redis, here on one node: no fence and no watchdog, and it waits by its own count of tries rather than your context.",
	"redsync-redigo": "The same redsync mutex on a redigo pool: a lock on another client library, judged at the wire all the same; redigo bounds each command by its connection's timeouts, not your context.",
	"rueidislock":    "rueidis's lock: its lease is renewed for as long as you hold it, and its context ends when the lease is lost; no fence, and the TTL is the Locker's (0 is its 5s default). An Acquire whose first reply is lost, or slower than its 20ms, waits for a lock nobody holds until your context ends; on a busy machine the next holder after a killed one has waited so too.",
	"redis-py":       "redis-py's Lock (Python), judged through a holder of 59 lines: no fence, no watchdog; a timeout of 0 is a lock that never expires, and a lost reply to its SET leaves the lease to run out its TTL.",
}

const (
	matrixBegin = "<!-- matrix: make judge-matrix writes from here -->"
	matrixEnd   = "<!-- matrix: to here -->"
)

// matrix judges every lock, mutant and variant, and writes the table
// into the file between its markers.
func matrix(ctx context.Context, root, file string, seed int64, stdout, stderr io.Writer) int {
	old, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	begin, end := bytes.Index(old, []byte(matrixBegin)), bytes.Index(old, []byte(matrixEnd))
	if begin < 0 || end < begin {
		fmt.Fprintf(stderr, "judge: %s has no matrix markers (%q ... %q)\n", file, matrixBegin, matrixEnd)
		return 1
	}
	start := time.Now()
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	var rows []row
	for _, a := range locks.All() {
		rows = append(rows, row{lock: a.Name})
	}
	for i, m := range lockbuild.Mutants {
		rows = append(rows, row{lock: "mutant:" + m.Name, mutant: &lockbuild.Mutants[i]})
	}
	for i := range rows {
		r, t := &rows[i], time.Now()
		if r.mutant == nil {
			r.report, r.err = judgeJSON(ctx, exe, seed, "-lock", r.lock)
		} else if b, err := lockbuild.BuildMutant(ctx, root, *r.mutant); err != nil {
			r.err = err
		} else {
			// A mutant changes the code, not how Redis forgets: the slow
			// faults say of it what they say of the article's lock, the
			// first row's.
			r.report, r.err = judgeJSON(ctx, b.Exe, seed, "-only", quickIDs(rows))
			b.Remove()
		}
		fmt.Fprintf(stdout, "judge: %s: %s (%v)\n", r.lock, r.report.Count(), time.Since(t).Round(time.Second))
		if ctx.Err() != nil {
			return 130
		}
	}
	var b bytes.Buffer
	b.Write(old[:begin+len(matrixBegin)])
	b.WriteString("\n")
	writeMatrix(&b, rows, seed, time.Since(start))
	b.Write(old[end:])
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		fmt.Fprintln(stderr, "judge:", err)
		return 1
	}
	fmt.Fprintf(stdout, "judge: wrote %s (%v)\n", file, time.Since(start).Round(time.Second))
	return 0
}

// slowFaults are the properties that take a minute each: the matrix
// judges them for the locks, and not again for every mutant.
var slowFaults = []string{"failover", "partition"}

// quickIDs lists, comma-separated, every property the rows judged but
// the slow faults.
func quickIDs(rows []row) string {
	var ids []string
	for _, v := range rows[0].report.Verdicts {
		if !slices.Contains(slowFaults, v.ID) {
			ids = append(ids, v.ID)
		}
	}
	return strings.Join(ids, ",")
}

// judgeJSON runs a judging program with -json on every chapter and reads
// its report; a lock that fails a property is the point, not an error.
func judgeJSON(ctx context.Context, exe string, seed int64, args ...string) (judge.Report, error) {
	var rep judge.Report
	cmd := exec.CommandContext(ctx, exe, append(args, "-json", "-seed", strconv.FormatInt(seed, 10), "-chapter", allChapters)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 1 && len(out) > 0 {
		err = nil
	}
	if err == nil {
		err = json.Unmarshal(out, &rep)
	}
	if err != nil {
		return rep, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return rep, nil
}

// writeMatrix writes the tables: the locks, the mutants, the variants,
// the hardened lock's guards, and why each cell is not a pass.
func writeMatrix(b *bytes.Buffer, rows []row, seed int64, took time.Duration) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	var locks, muts, variants []row
	reports := map[string]judge.Report{} // the locks', by name
	for _, r := range rows {
		switch {
		case r.mutant == nil:
			locks = append(locks, r)
			reports[r.lock] = r.report
		case r.mutant.Property == "":
			variants = append(variants, r)
		default:
			muts = append(muts, r)
		}
	}
	versions := "redis-server " + launch.RedisVersion() + " and PostgreSQL " + pgVersion()
	p("\nRegenerated by `make judge-matrix` (seed %d, %s here, on %s); each cell's command reproduces it.\n\n", seed, took.Round(time.Second), versions)
	p("### The locks\n\n")
	table(b, locks, seed)
	p("\nWhat each means for someone choosing a lock:\n\n")
	for _, r := range locks {
		p("- **%s**: %s%s\n", r.lock, means[r.lock], summary(r))
	}
	p("\n### The mutants: one mistake each in the article's lock\n\n")
	p("Each is the root's lock/ with one change, applied to a temporary copy when the judge builds it (lab/internal/lockbuild/mutants.go). Each fails the property its mistake breaks; the fix column is what the judge says. The slow faults (failover, partition) are judged for the locks only: \"as root's\" in a mutant's column.\n\n")
	p("| mutant | the one change | fails | the judge's fix | reproduce |\n|---|---|---|---|---|\n")
	for _, r := range muts {
		v := find(r.report, r.mutant.Property)
		p("| %s | %s | %s: **%s** | %s | `make judge LOCK=mutant:%s ONLY=%s SEED=%d` |\n", r.mutant.Name, cell(r.mutant.Mistake), cell(v.Title), v.Outcome, cell(v.Fix), r.mutant.Name, r.mutant.Property, seed)
	}
	p("\n")
	table(b, muts, seed)
	p("\n### The variants: the article's lock written correctly another way\n\n")
	p("Each must pass everything the article's lock passes: a check and an act in separate commands is safe when WATCH makes EXEC fail after the key changed.\n\n")
	p("| variant | written how | verdicts | reproduce |\n|---|---|---|---|\n")
	for _, r := range variants {
		p("| %s | %s | %s | `make judge LOCK=mutant:%s SEED=%d` |\n", r.mutant.Name, cell(r.mutant.Mistake), r.report.Count(), r.mutant.Name, seed)
	}
	p("\n### The hardened lock's guards\n\n")
	p("Where the article's lock fails and the lab's hardened lock holds: what production adds.\n\n")
	p("| property | the article's lock | the hardened lock | reproduce |\n|---|---|---|---|\n")
	for _, v := range reports["root"].Verdicts {
		if h := find(reports["hardened"], v.ID); v.Outcome == "FAIL" && h.Outcome == "pass" {
			p("| %s | FAIL: %s | pass: %s | `make judge ONLY=%s SEED=%d`, `make judge LOCK=hardened ONLY=%s SEED=%d` |\n", cell(v.Title), cell(v.Why), cell(h.Why), v.ID, seed, v.ID, seed)
		}
	}
	p("\n### Why each cell that is not a pass\n\n")
	p("For a mutant or a variant, only the cells where it differs from the article's lock.\n\n")
	for _, r := range rows {
		for _, v := range r.report.Verdicts {
			if r.mutant != nil && find(reports["root"], v.ID).Outcome == v.Outcome {
				continue
			}
			if v.Outcome != "pass" && v.Outcome != "not claimed" {
				fix := ""
				if v.Fix != "" {
					fix = " Likely: " + cell(v.Fix) + "."
				}
				p("- **%s**, %s: %s: %s.%s `%s`\n", r.lock, cell(v.Title), v.Outcome, oneSentence(v.Why), fix, repro(r, v.ID, seed))
			}
		}
		if r.err != nil {
			p("- **%s**: the judge could not finish: %s\n", r.lock, oneSentence(r.err.Error()))
		}
	}
	p("\n")
}

// table writes one table: a row per property, a column per lock.
func table(b *bytes.Buffer, rows []row, seed int64) {
	var props []judge.Verdict
	for _, r := range rows {
		if len(r.report.Verdicts) > len(props) {
			props = r.report.Verdicts
		}
	}
	head, rule, again := "| property |", "|---|", "| reproduce |"
	for _, r := range rows {
		head, rule, again = head+" "+r.lock+" |", rule+"---|", again+" `"+repro(r, "", seed)+"` |"
	}
	fmt.Fprintf(b, "%s\n%s\n", head, rule)
	for _, prop := range props {
		fmt.Fprintf(b, "| %s: %s |", prop.Chapter, cell(prop.Title))
		for _, r := range rows {
			v := find(r.report, prop.ID)
			word := v.Outcome
			switch v.Outcome {
			case "":
				word = "not run"
				if slices.Contains(slowFaults, prop.ID) {
					word = "as root's"
				}
			case "broken, as the lesson expects":
				word = "broken, as expected"
			case "FAIL":
				word = "**FAIL**"
			}
			fmt.Fprintf(b, " %s |", word)
		}
		fmt.Fprintf(b, "\n")
	}
	fmt.Fprintf(b, "%s\n", again)
}

// repro is the command that judges the row again (one property when id is
// set).
func repro(r row, id string, seed int64) string {
	cmd := "make judge"
	if r.lock != "root" {
		cmd += " LOCK=" + r.lock
	}
	if id != "" {
		cmd += " ONLY=" + id
	} else {
		cmd += " STEP=" + allChapters
	}
	return fmt.Sprintf("%s SEED=%d", cmd, seed)
}

// summary lists the properties a known lock fails, and those it breaks
// as the lesson expects.
func summary(r row) string {
	s := ""
	for _, o := range [][2]string{{"FAIL", "Fails"}, {"broken, as the lesson expects", "Broken, as the lesson expects"}} {
		var ids []string
		for _, v := range r.report.Verdicts {
			if v.Outcome == o[0] {
				ids = append(ids, v.ID)
			}
		}
		if len(ids) > 0 {
			s += " " + o[1] + ": " + strings.Join(ids, ", ") + "."
		}
	}
	if r.err != nil {
		s += " The judge could not finish it."
	}
	return s
}

func find(rep judge.Report, id string) judge.Verdict {
	for _, v := range rep.Verdicts {
		if v.ID == id {
			return v
		}
	}
	return judge.Verdict{ID: id}
}

// cell keeps a text from breaking a Markdown table.
func cell(s string) string { return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ") }

func oneSentence(s string) string { return cell(strings.TrimSuffix(s, ".")) }

// pgVersion is the PostgreSQL server's version, as SHOW server_version
// says it.
func pgVersion() string {
	ctx := context.Background()
	pool, err := postgres.Connect(ctx)
	if err != nil {
		return "?"
	}
	defer pool.Close()
	v, err := env.PostgresVersion(ctx, pool)
	if err != nil {
		return "?"
	}
	return v
}
