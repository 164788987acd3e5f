// Workshop runs every step with settings short enough for a room full of
// laptops and prints one table: each phase, the verdict the tutorial
// promises (from package lesson), the verdict this machine gave, and
// whether they match. It exits 1 when any phase differs or a step fails.
//
//	make workshop            # the table
//	make workshop JSON=1     # the table, and workshop-<host>.json for the facilitator
//	go run ./cmd/workshop -json > my-laptop.json
//
// The JSON holds every phase's figures as each step reported them, plus
// the machine's host label (-host, the hostname by default) and its Go,
// Redis and PostgreSQL versions, so a room's results can be collected and
// compared. The facilitator puts the files side by side with -compare,
// which runs nothing (see compare.go):
//
//	go run ./cmd/workshop -compare -html room.html workshop-*.json
//
// Ctrl-C is passed on to the step that is running, which stops, cleans up
// and reports what it measured; the workshop then prints the phases run so
// far and exits 130. A second Ctrl-C exits at once.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"example.com/walletlock/internal/cli"
	"example.com/walletlock/internal/lesson"
	"example.com/walletlock/internal/services"
)

// plan is what the workshop runs, in tutorial order. Each step also gets
// -json and a -prefix of its own (see runStep); the steps that keep
// wallets in PostgreSQL get ids of their own from ids.
var plan = []struct {
	step string
	args func(ids int64) []string
}{
	{"step1-race", func(int64) []string { return []string{"-runs", "3"} }},
	{"step2-lock", nil},
	{"step3-ttl", nil},
	{"step4-redislock", nil},
	{"step5-fencing", func(ids int64) []string { return []string{"-wallet-id", strconv.FormatInt(ids, 10)} }},
	{"step6-loadtest", func(ids int64) []string {
		return []string{"-duration", "2s", "-first-id", strconv.FormatInt(ids+1000, 10)}
	}},
	// The drill's two sharpest cells, one seed each: real processes, a
	// paused holder and a Redis restarted empty, against lock and fenced.
	{lesson.DrillStep, func(ids int64) []string {
		return []string{"-nemesis", "pause,restart", "-strategy", "lock,fenced", "-seeds", "1", "-first-id", strconv.FormatInt(ids+2000, 10)}
	}},
}

// formatVersion is the layout of the JSON document. It only changes when
// a key changes meaning; adding keys keeps it, and -compare refuses a file
// of a newer one. Files written before the key existed are version 1.
const formatVersion = 1

// report is the JSON document; Steps keeps each step's own output whole.
type report struct {
	Format   int                        `json:"format"`
	Host     string                     `json:"host"` // the -host label
	Go       string                     `json:"go"`
	OS       string                     `json:"os"`
	CPUs     int                        `json:"cpus"`
	Redis    string                     `json:"redis"`
	Postgres string                     `json:"postgres"`
	Started  time.Time                  `json:"started"`
	Seconds  float64                    `json:"seconds"`
	Phases   []row                      `json:"phases"`
	Steps    map[string]json.RawMessage `json:"steps"`
	Failures []string                   `json:"failures,omitempty"`
	// The step Ctrl-C interrupted; the phases are those run before.
	Interrupted string `json:"interrupted,omitempty"`
}

type row struct {
	lesson.Result
	Match bool `json:"match"`
}

func main() { cli.Main(run) }

type options struct {
	json, save, compare bool
	host, html, prefix  string
}

func flags() (*flag.FlagSet, *options) {
	var o options
	fs := flag.NewFlagSet("workshop", flag.ContinueOnError)
	fs.BoolVar(&o.json, "json", false, "print one JSON document instead of the table")
	fs.StringVar(&o.host, "host", hostname(), "this machine's label in the JSON and in the name of the file -save writes")
	fs.BoolVar(&o.save, "save", false, "print the table, and write the JSON to workshop-<host>.json for the facilitator")
	fs.BoolVar(&o.compare, "compare", false, "run nothing: compare the workshop JSON files named after the flags")
	fs.StringVar(&o.html, "html", "", "with -compare, also write the room's page to this file")
	fs.StringVar(&o.prefix, "prefix", "walletlock:workshop:", "where the run keeps its Redis keys and owns its PostgreSQL rows, under a tag of its own")
	return fs, &o
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, opt := flags()
	// The files -compare reads follow the flags. cli.Parse refuses
	// arguments, so it gets the flags alone: a second flag set, which
	// stops at the first file, tells where they end.
	probe, _ := flags()
	probe.SetOutput(io.Discard)
	var files []string
	if probe.Parse(args) == nil {
		files = probe.Args()
		args = args[:len(args)-len(files)]
	}
	if code, stop := cli.Parse(fs, args, stdout, stderr); stop {
		return code
	}
	var bad error
	switch {
	case !opt.compare && len(files) > 0:
		bad = fmt.Errorf("unexpected argument %q (files go with -compare)", files[0])
	case opt.compare && len(files) == 0:
		bad = errors.New("-compare needs the workshop JSON files to read, e.g. -compare workshop-*.json")
	case !opt.compare && opt.html != "":
		bad = errors.New("-html goes with -compare: it writes the page of the files compared")
	case opt.compare && (opt.json || opt.save):
		bad = errors.New("-compare runs nothing, so it takes neither -json nor -save")
	case strings.TrimSpace(opt.host) == "":
		bad = errors.New("-host must not be empty: it names this machine on the facilitator's page")
	}
	if code, stop := cli.Refuse(fs, stderr, bad, cli.CheckPrefix(opt.prefix)); stop {
		return code
	}
	if opt.compare {
		return compare(files, opt.html, stdout, stderr)
	}

	rep := report{
		Format:  formatVersion,
		Host:    strings.TrimSpace(opt.host),
		Go:      runtime.Version(),
		OS:      runtime.GOOS + "/" + runtime.GOARCH,
		CPUs:    runtime.NumCPU(),
		Started: time.Now().UTC().Truncate(time.Second),
		Steps:   map[string]json.RawMessage{},
	}
	if err := versions(ctx, &rep); err != nil {
		fmt.Fprintln(stderr, "workshop:", err)
		return 1
	}

	// Build once, so the timings of the steps do not include compiling.
	bin, err := os.MkdirTemp("", "walletlock-workshop-")
	if err != nil {
		fmt.Fprintln(stderr, "workshop:", err)
		return 1
	}
	defer os.RemoveAll(bin)
	// The package path, not ./cmd/..., so that it builds from any directory
	// of the module (the tests run in cmd/workshop).
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), "example.com/walletlock/cmd/...")
	build.Stderr = stderr
	if err := build.Run(); err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "workshop: interrupted by Ctrl-C while building the steps; nothing ran")
			return cli.ExitInterrupted
		}
		fmt.Fprintln(stderr, "workshop: go build ./cmd/... failed:", err)
		return 1
	}

	// A room may share one Redis and one PostgreSQL. Two laptops running the
	// workshop at once must not spend from each other's wallets, or both
	// would see lost updates that no lock could prevent: every run gets
	// keys and wallet ids of its own.
	tag := fmt.Sprintf("%08x", rand.Uint32())
	ids := 2_000_000_000 + rand.Int64N(1_000_000_000)
	for _, p := range plan {
		if !opt.json {
			fmt.Fprintf(stderr, "workshop: running %s\n", p.step)
		}
		var args []string
		if p.args != nil {
			args = p.args(ids)
		}
		prefix := opt.prefix + tag + ":" + p.step + ":"
		out, err := runStep(ctx, filepath.Join(bin, p.step), prefix, args, stderr)
		if out != nil {
			rep.Steps[p.step] = out
		}
		var got struct{ Phases []lesson.Result }
		jerr := json.Unmarshal(out, &got)
		if p.step == lesson.DrillStep {
			got.Phases, jerr = drillPhases(out)
		}
		for _, r := range got.Phases {
			rep.Phases = append(rep.Phases, row{r, r.Match()})
		}
		if ctx.Err() != nil {
			// The step had its Ctrl-C and named what it could not clean up,
			// unless it took too long and was killed.
			rep.Interrupted = p.step
			var exit *exec.ExitError
			if errors.As(err, &exit) && !exit.Exited() {
				fmt.Fprintf(stderr, "workshop: %s did not exit within %v of Ctrl-C and was killed; what it wrote may be left: %s\n", p.step, cli.WaitDelay, leftovers(opt.prefix+tag+":"))
			}
			break
		}
		if out == nil || jerr != nil {
			rep.Failures = append(rep.Failures, fmt.Sprintf("%s: %v", p.step, err))
		}
	}
	if rep.Interrupted == "" {
		rep.Failures = append(rep.Failures, missing(rep.Phases)...)
	}
	rep.Seconds = time.Since(rep.Started).Round(time.Second).Seconds()

	ok := len(rep.Failures) == 0
	for _, r := range rep.Phases {
		ok = ok && r.Match
	}
	if opt.json {
		writeJSON(stdout, rep)
	} else {
		printTable(stdout, rep)
	}
	var saveErr error
	if opt.save {
		saveErr = saveJSON(rep, stderr)
	}
	switch {
	case saveErr != nil:
		fmt.Fprintln(stderr, "workshop:", saveErr)
		return 1
	case rep.Interrupted != "":
		fmt.Fprintf(stderr, "workshop: interrupted by Ctrl-C during %s; the table shows the %d phases that ran in full\n", rep.Interrupted, len(rep.Phases))
		return cli.ExitInterrupted
	case !ok:
		fmt.Fprintln(stderr, "workshop: some phases did not print what the tutorial says; see the table")
		return 1
	}
	return 0
}

// leftovers gives the commands that delete whatever a killed step wrote
// under prefix: Redis keys, and the PostgreSQL rows it owns.
func leftovers(prefix string) string {
	redisCmd := "redis-cli --scan --pattern '" + prefix + "*' | xargs redis-cli del"
	if opt, err := services.RedisOptions(); err == nil {
		redisCmd = cli.RedisDelPrefix(opt, prefix)
	}
	return fmt.Sprintf(`%s; psql "$DATABASE_URL" -c "DELETE FROM walletlock_wallets WHERE owner LIKE '%s%%'"`, redisCmd, prefix)
}

// missing lists the phases the lesson promises that no step reported: a
// step that stops printing a phase must not pass unnoticed.
func missing(rows []row) []string {
	seen := map[string]bool{}
	for _, r := range rows {
		seen[r.Step+"/"+r.Phase] = true
	}
	var out []string
	for _, p := range lesson.Phases {
		if !seen[p.Step+"/"+p.Phase] {
			out = append(out, fmt.Sprintf("%s phase %s: not reported", p.Step, p.Phase))
		}
	}
	return out
}

// runStep runs one step with -json and returns its JSON output. A step
// exits 1 when a phase misses its verdict but still prints its JSON, so
// the output is returned whenever there is some. What the step writes to
// stderr goes to stderr as it comes, and into the error.
func runStep(ctx context.Context, path, prefix string, args []string, stderr io.Writer) (json.RawMessage, error) {
	args = append([]string{"-json", "-prefix", prefix}, args...)
	var out, errb bytes.Buffer
	cmd := cli.Command(ctx, path, args...) // Ctrl-C reaches it as one interrupt
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(stderr, &errb)
	err := cmd.Run()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, bytes.TrimSpace(errb.Bytes()))
	}
	if raw, ok := jsonDoc(out.Bytes()); ok {
		return raw, err
	}
	return nil, err
}

// jsonDoc is a step's -json output as one JSON value: the steps print one
// document, the drill one JSON line per run, which become an array.
func jsonDoc(b []byte) (json.RawMessage, bool) {
	b = bytes.TrimSpace(b)
	if json.Valid(b) {
		return json.RawMessage(b), true
	}
	lines := bytes.Split(b, []byte("\n"))
	for _, l := range lines {
		if !json.Valid(l) {
			return nil, false
		}
	}
	return json.RawMessage(append(append([]byte("["), bytes.Join(lines, []byte(","))...), ']')), true
}

// drillPhases turns the drill's rows into phases of the step "drill",
// named nemesis/strategy and judged by lesson.Drills.
func drillPhases(out json.RawMessage) ([]lesson.Result, error) {
	var rows []struct {
		Nemesis, Strategy, Check string
		OK                       bool
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		return nil, fmt.Errorf("drill: %w", err)
	}
	var phases []lesson.Result
	for _, r := range rows {
		phases = append(phases, lesson.NewResult(lesson.DrillStep, lesson.DrillPhase(r.Nemesis, r.Strategy), r.Check, r.OK))
	}
	return phases, nil
}

func writeJSON(w io.Writer, rep report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// saveJSON writes the JSON document to workshop-<host>.json in the current
// directory, so that a facilitator collects one file per machine without
// renaming any.
func saveJSON(rep report, stderr io.Writer) error {
	name := "workshop-" + fileSafe(rep.Host) + ".json"
	var b bytes.Buffer
	writeJSON(&b, rep)
	if err := os.WriteFile(name, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	fmt.Fprintf(stderr, "workshop: wrote %s; send it to the facilitator\n", name)
	return nil
}

// fileSafe turns a host label into part of a file name: letters, digits,
// dots, dashes and underscores, every other run of characters one dash.
func fileSafe(label string) string {
	var b strings.Builder
	dash := false
	for _, r := range label {
		switch {
		case r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("._-", r)):
			b.WriteRune(r)
			dash = false
		case !dash:
			b.WriteByte('-')
			dash = true
		}
	}
	if s := strings.Trim(b.String(), "-."); s != "" {
		return s
	}
	return "host"
}

// hostname is the default -host: the machine's name, its first label.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	h, _, _ = strings.Cut(h, ".")
	return h
}

func versions(ctx context.Context, rep *report) error {
	rdb, err := services.Connect(ctx)
	if err != nil {
		return err
	}
	defer rdb.Close()
	if rep.Redis, err = services.RedisVersion(ctx, rdb); err != nil {
		return err
	}
	pool, err := services.ConnectPostgres(ctx)
	if err != nil {
		return err
	}
	defer pool.Close()
	rep.Postgres, err = services.PostgresVersion(ctx, pool)
	return err
}

func printTable(w io.Writer, rep report) {
	fmt.Fprintf(w, "walletlock workshop: %s %s, %d CPUs, Redis %s, PostgreSQL %s, %.0fs\n\n",
		rep.Go, rep.OS, rep.CPUs, rep.Redis, rep.Postgres, rep.Seconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tPHASE\tEXPECTED\tACTUAL\tMATCH\tCHECK")
	for _, r := range rep.Phases {
		match := "yes"
		if !r.Match {
			match = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Step, r.Phase, r.Want, r.Verdict, match, r.Check)
	}
	tw.Flush()
	for _, f := range rep.Failures {
		fmt.Fprintln(w, "FAILED:", f)
	}
}
